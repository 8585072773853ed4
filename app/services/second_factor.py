"""Second factor: an authenticator app (TOTP, RFC 6238, via pyotp) and recovery codes.

- Enrollment: a fresh secret is sealed and stored unconfirmed; the member adds it to their app and
  types a first code, which confirms it and yields ten recovery codes (shown once).
- Sign-in: after the password, a member with a confirmed factor types a code from the app (one
  step of clock drift either way; each code is accepted once) or a recovery code (each works once).
- The ID token says how the member signed in: `amr` (RFC 8176: `pwd`, `otp`) and `acr` (the
  REFEDS assurance profiles: single-factor or multi-factor); an app asking `acr_values` for the
  multi-factor profile makes a member who has a second factor use it.

The TOTP secret must be readable to check codes, so it is sealed with AES-256-GCM under a key
derived (HKDF-SHA256) from SECRET_KEY and bound to the member's id; recovery codes are hashed.
Services only flush; the caller commits.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from typing import Any, Literal

import pyotp
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app
from sqlalchemy import ColumnElement, CursorResult, bindparam, delete, exists, func, or_, select, update
from sqlalchemy.orm import InstrumentedAttribute

from app.core.extensions import db
from app.models import Passkey, RecoveryCode, TotpFactor, User
from app.models.base import sha256_hex, utcnow
from app.services.audit import record
from app.store.members import ACCOUNT_COLUMNS, Account, MemberFacts
from app.store.statements import first

RECOVERY_CODES = 10
RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read off paper
ISSUER_NAME = "Credits ID"
HKDF_INFO = b"credits-id totp secret v1"


# -- sealing the TOTP secret -------------------------------------------------------------------


def _aead() -> AESGCM:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=HKDF_INFO).derive(
        current_app.config["SECRET_KEY"].encode()
    )
    return AESGCM(key)


def _seal(secret: str, user_id: str) -> bytes:
    nonce = os.urandom(12)
    return nonce + _aead().encrypt(nonce, secret.encode(), user_id.encode())


def _unseal(sealed: bytes, user_id: str) -> str | None:
    try:
        return _aead().decrypt(sealed[:12], sealed[12:], user_id.encode()).decode()
    except (InvalidTag, ValueError):  # SECRET_KEY changed, or the row was moved to another member
        return None


# -- enrollment -------------------------------------------------------------------------------


def totp_factor(user: User) -> TotpFactor | None:
    return db.session.get(TotpFactor, user.id)


def asks_second_factor(user_id: ColumnElement[str] | InstrumentedAttribute[str]) -> ColumnElement[bool]:
    """The rule, as SQL: sign-in asks the member `user_id` for a second factor after the password
    when they have a confirmed authenticator app or a passkey."""
    return or_(
        exists().where(TotpFactor.user_id == user_id, TotpFactor.confirmed_at.is_not(None)),
        exists().where(Passkey.user_id == user_id),
    )


# Built once: every sign-in asks, and building the statement and its cache key cost more than
# running it.
_HAS_SECOND_FACTOR = select(asks_second_factor(bindparam("user_id")))
# In Core, run straight on the cursor (app/store/statements.py): the login page only reads the
# member, and loading an ORM User costs more than the query (docs/performance.md).
_users = User.__table__
_SIGNING_IN = select(
    *(_users.c[name] for name in ACCOUNT_COLUMNS), asks_second_factor(_users.c.id).label("asks_second_factor")
).where(_users.c.email == bindparam("email"))


def has_second_factor(user: MemberFacts) -> bool:
    """A confirmed authenticator app or a passkey: sign-in asks for it after the password (one query)."""
    return bool(db.session.scalar(_HAS_SECOND_FACTOR, {"user_id": user.id}))


def member_signing_in(email: str | None) -> tuple[Account | None, bool]:
    """The member with this address (compared as stored: normalised), and whether their sign-in
    asks for a second factor after the password: the login page asks both of every sign-in, so
    in one query."""
    row = first(_SIGNING_IN, {"email": User.normalize_email(email or "")})
    if row is None:
        return None, False
    return Account(*(getattr(row, name) for name in ACCOUNT_COLUMNS)), bool(row.asks_second_factor)


def has_totp(user: User) -> bool:
    """A confirmed authenticator app."""
    return (
        db.session.scalar(
            select(func.count())
            .select_from(TotpFactor)
            .where(TotpFactor.user_id == user.id, TotpFactor.confirmed_at.is_not(None))
        )
        == 1
    )


def begin_totp(user: User) -> str:
    """A new secret for the member's authenticator app (base32), stored sealed and unconfirmed,
    replacing an unfinished enrollment. Refused (ValueError) while a confirmed one exists."""
    factor = totp_factor(user)
    if factor is not None and factor.confirmed_at is not None:
        raise ValueError("an authenticator app is already set up")
    secret = pyotp.random_base32()
    if factor is None:
        db.session.add(TotpFactor(user_id=user.id, secret_sealed=_seal(secret, user.id)))
    else:
        factor.secret_sealed, factor.created_at, factor.last_used_step = _seal(secret, user.id), utcnow(), None
    db.session.flush()
    return secret


def pending_secret(user: User) -> str | None:
    """The secret of an unfinished enrollment (to show again), or None."""
    factor = totp_factor(user)
    if factor is None or factor.confirmed_at is not None:
        return None
    return _unseal(factor.secret_sealed, user.id)


def provisioning_uri(user: User, secret: str) -> str:
    """The otpauth:// address authenticator apps read (as a QR code or a link)."""
    return pyotp.TOTP(secret).provisioning_uri(name=user.email, issuer_name=ISSUER_NAME)


def confirm_totp(user: User, code: str) -> list[str] | None:
    """Confirm the enrollment with a first code from the app: returns new recovery codes to show
    once (an empty list when the member has some already, from a passkey), or None when the code
    is wrong."""
    factor = totp_factor(user)
    if factor is None or factor.confirmed_at is not None or _check_totp(factor, user, code) != "otp":
        return None
    factor.confirmed_at = utcnow()
    codes = new_recovery_codes(user) if recovery_codes_left(user) == 0 else []
    record("2fa.enrolled", actor=user, subject=user, kind="totp")
    return codes


def remove_totp(user: User, actor: User | None) -> bool:
    """Remove the authenticator app (and the recovery codes, unless a passkey remains: then sign-in
    asks for the password only). `actor`: the member themselves, or None for support's CLI."""
    factor = totp_factor(user)
    if factor is None:
        return False
    confirmed = factor.confirmed_at is not None
    db.session.delete(factor)
    db.session.flush()
    forget_recovery_codes_if_unused(user)
    if confirmed:
        record("2fa.removed", actor=actor, subject=user, kind="totp")
    return confirmed


def forget_recovery_codes_if_unused(user: User) -> None:
    """Recovery codes stand in for a second factor: without any, they go too."""
    if not has_second_factor(user):
        db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))


def new_recovery_codes(user: User) -> list[str]:
    """Ten new recovery codes (the old ones stop working); only their hashes are stored."""
    db.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    codes = [
        "-".join("".join(secrets.choice(RECOVERY_ALPHABET) for _ in range(4)) for _ in range(4))
        for _ in range(RECOVERY_CODES)
    ]
    db.session.add_all(RecoveryCode(user_id=user.id, code_hash=sha256_hex(_normalized(c))) for c in codes)
    db.session.flush()
    return codes


def recovery_codes_left(user: User) -> int:
    return (
        db.session.scalar(
            select(func.count())
            .select_from(RecoveryCode)
            .where(RecoveryCode.user_id == user.id, RecoveryCode.used_at.is_(None))
        )
        or 0
    )


# -- sign-in ----------------------------------------------------------------------------------


# What a typed code turned out to be: a code from the app ("otp"), a recovery code ("recovery"),
# a right code from the app that was used already ("reused": say so, and to wait for the next
# one), or neither (None).
Verdict = Literal["otp", "recovery", "reused"]


def verify(user: User, code: str) -> Verdict | None:
    """Check a code typed at sign-in: digits are a code from the app, anything else a recovery
    code (used up here, audited)."""
    code = (code or "").strip()
    digits = code.replace(" ", "")
    if digits.isascii() and digits.isdigit():
        return verify_app_code(user, digits)
    return "recovery" if use_recovery_code(user, code) else None


def verify_app_code(user: User, code: str) -> Literal["otp", "reused"] | None:
    """A code from the member's confirmed authenticator app: "otp" when right (and now used up),
    "reused" when right but already used, None otherwise."""
    factor = totp_factor(user)
    if factor is None or factor.confirmed_at is None:
        return None
    return _check_totp(factor, user, code.replace(" ", ""))


def use_recovery_code(user: User, code: str) -> bool:
    """A recovery code of the member's, used up here (each works once) and audited. Kept only
    while the member has a second factor."""
    if not _use_recovery_code(user, code or ""):
        return False
    record("2fa.recovery_code_used", actor=user, subject=user, left=recovery_codes_left(user))
    return True


def _check_totp(factor: TotpFactor, user: User, code: str) -> Literal["otp", "reused"] | None:
    """A 6-digit code of the current 30-second step or the one before or after it, accepted once:
    the step is recorded with a conditional UPDATE, so a replayed (or raced) code fails - as
    "reused", which is worth telling the member (a right code, typed twice or too late after a
    newer one), not as a wrong one."""
    secret = _unseal(factor.secret_sealed, user.id)
    if secret is None or len(code) != 6:
        return None
    totp, now = pyotp.TOTP(secret), int(time.time())
    for step in (now // 30, now // 30 - 1, now // 30 + 1):
        if hmac.compare_digest(totp.at(step * 30), code):
            result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
                update(TotpFactor)
                .where(
                    TotpFactor.user_id == user.id,
                    or_(TotpFactor.last_used_step.is_(None), TotpFactor.last_used_step < step),
                )
                .values(last_used_step=step)
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 1:
                factor.last_used_step = step
                return "otp"
            return "reused"
    return None


def _normalized(code: str) -> str:
    return "".join(ch for ch in code.lower() if ch.isalnum())


def _use_recovery_code(user: User, code: str) -> bool:
    normalized = _normalized(code)
    if len(normalized) != 16:
        return False
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
        update(RecoveryCode)
        .where(
            RecoveryCode.user_id == user.id,
            RecoveryCode.code_hash == sha256_hex(normalized),
            RecoveryCode.used_at.is_(None),
        )
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1
