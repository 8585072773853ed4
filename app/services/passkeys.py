"""Passkeys (WebAuthn, via the `webauthn` package): registered on the account page, then used as the
second step after the password, or on their own to sign in without a password.

The relying-party id is the issuer's host name and the expected origin the issuer's origin, so a
passkey works only on this issuer (browsers refuse an IP address as relying-party id: a local run
uses http://localhost:5000 for passkeys). Passkeys are made discoverable and ask the device for its
PIN or biometrics (user verification), so a passkey sign-in alone proves two factors: `amr` is
`hwk` and `acr` multi-factor. Only public keys are stored. Services only flush.

A replayed answer gets nothing:
- each ceremony's challenge is kept server-side (app/models/webauthn_challenge.py), bound to the
  browser that asked by a random handle in its session, for five minutes, and used up by the
  first answer, right or wrong, in one statement (DELETE ... RETURNING): an old copy of the cookie
  finds no challenge, and of two copies of one answer sent at once only one finds it;
- a counting authenticator's signature count must grow (WebAuthn 6.1.1): the new count is stored
  by a conditional UPDATE (`WHERE sign_count < new`), so of two answers carrying one count (a
  replay, or a cloned authenticator) one is refused, even when both were checked at once;
- the answer's `userHandle`, when the authenticator sends one, must be the passkey's member (and a
  sign-in with a passkey alone must send it: it names the member signing in).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, session
from sqlalchemy import CursorResult, delete, func, select, update
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, parse_client_data_json
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from app.core.extensions import db
from app.models import Passkey, User, WebauthnChallenge
from app.models.base import new_secret, sha256_hex, utcnow
from app.services.audit import record

CHALLENGE_KEY = "webauthn"  # session key: the handle of this browser's pending ceremony
CHALLENGE_LIFETIME = 300
MAX_PASSKEYS = 10
MAX_HANDLE_LENGTH = 100  # new_secret(32) is 43 characters; anything much longer is not ours
RP_NAME = "Credits ID"
EXPIRED = "The passkey request expired. Try again."
NOT_CHECKED = "The passkey could not be checked. Try again."
NOT_THIS_ACCOUNTS = "That passkey is not registered for this account."
# What the webauthn package and the JSON parsing raise on an answer that does not hold up.
_REFUSALS = (WebAuthnException, ValueError, KeyError, TypeError)


class PasskeyError(ValueError):
    """The browser's answer does not prove a passkey of this member (or the ceremony expired)."""


def available() -> bool:
    """Browsers accept a host name as relying-party id, never an IP address: with an issuer such
    as http://127.0.0.1:5000 the passkey buttons are not offered (use http://localhost:5000)."""
    import ipaddress

    try:
        ipaddress.ip_address(rp_id().strip("[]"))
    except ValueError:
        return True
    return False


def rp_id() -> str:
    return urlsplit(current_app.config["ISSUER_URL"]).hostname or "localhost"


def origin() -> str:
    parts = urlsplit(current_app.config["ISSUER_URL"])
    return f"{parts.scheme}://{parts.netloc}"


def passkeys_of(user: User) -> list[Passkey]:
    return list(db.session.scalars(select(Passkey).where(Passkey.user_id == user.id).order_by(Passkey.created_at)))


DEFAULT_NAME = "Passkey"
MAX_NAME_LENGTH = 64


def name_in_use(user: User, name: str) -> bool:
    """One of the member's passkeys is called `name` already (whatever the capitals)."""
    wanted = name.strip().lower()
    return any(p.name.lower() == wanted for p in passkeys_of(user))


def free_name(user: User, wanted: str | None) -> str:
    """`wanted` (or "Passkey"), numbered ("Laptop 2", "Laptop 3"...) when the member has a passkey of
    that name: a member's passkeys are told apart by name (unique per member, migration 0017)."""
    base = (wanted or "").strip()[:MAX_NAME_LENGTH] or DEFAULT_NAME
    taken = {p.name.lower() for p in passkeys_of(user)}
    name, n = base, 1
    while name.lower() in taken:
        n += 1
        suffix = f" {n}"
        name = base[: MAX_NAME_LENGTH - len(suffix)] + suffix
    return name


def count(user: User) -> int:
    return db.session.scalar(select(func.count()).select_from(Passkey).where(Passkey.user_id == user.id)) or 0


def _remember(challenge: bytes, purpose: str, user: User | None) -> None:
    """Keep a new ceremony's challenge for this browser: a random handle in its session, the
    handle's and the challenge's SHA-256 in a row (flushed; the page commits). A browser has one
    ceremony pending: a newer one's handle replaces the older in the session."""
    handle = new_secret(32)
    db.session.add(
        WebauthnChallenge(
            handle_hash=sha256_hex(handle),
            challenge_hash=_challenge_hash(challenge),
            purpose=purpose,
            user_id=user.id if user is not None else None,
            expires_at=utcnow() + timedelta(seconds=CHALLENGE_LIFETIME),
        )
    )
    db.session.flush()
    session[CHALLENGE_KEY] = handle


def _challenge_hash(challenge: bytes) -> str:
    return hashlib.sha256(challenge).hexdigest()


def _challenge(purpose: str, user: User | None, answer: dict[str, Any]) -> bytes:
    """The challenge this browser was given for `purpose` (and `user`), used up here whatever
    follows, and the one `answer` signed. The row is deleted and read in one statement: of two
    requests carrying the same handle, only one gets it."""
    handle = session.pop(CHALLENGE_KEY, None)
    if not isinstance(handle, str) or len(handle) > MAX_HANDLE_LENGTH:
        raise PasskeyError(EXPIRED)
    table = WebauthnChallenge.__table__
    pending = db.session.execute(
        delete(table)
        .where(table.c.handle_hash == sha256_hex(handle))
        .returning(table.c.challenge_hash, table.c.purpose, table.c.user_id, table.c.expires_at)
    ).one_or_none()
    if (
        pending is None
        or pending.purpose != purpose
        or pending.user_id != (user.id if user is not None else None)
        or pending.expires_at <= utcnow()
    ):
        raise PasskeyError(EXPIRED)
    try:
        signed = parse_client_data_json(base64url_to_bytes(answer["response"]["clientDataJSON"])).challenge
    except _REFUSALS as exc:
        raise PasskeyError(NOT_CHECKED) from exc
    if not hmac.compare_digest(_challenge_hash(signed), pending.challenge_hash):
        raise PasskeyError(NOT_CHECKED)
    return signed


# -- registration -------------------------------------------------------------------------------


def registration_options(user: User) -> str:
    """The JSON options for navigator.credentials.create(): a discoverable credential with user
    verification, not one the member registered already."""
    if count(user) >= MAX_PASSKEYS:
        raise PasskeyError(f"You have {MAX_PASSKEYS} passkeys already: remove one first.")
    options = generate_registration_options(
        rp_id=rp_id(),
        rp_name=RP_NAME,
        user_id=user.id.encode(),
        user_name=user.email,
        user_display_name=user.name,
        challenge=secrets.token_bytes(32),
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED, user_verification=UserVerificationRequirement.REQUIRED
        ),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=_raw(p.credential_id)) for p in passkeys_of(user)],
    )
    _remember(options.challenge, "register", user)
    return options_to_json(options)


def register(user: User, credential_json: str, name: str) -> Passkey:
    """Verify the browser's answer to create() and keep the new passkey (its public key)."""
    answer = _parsed(credential_json)
    challenge = _challenge("register", user, answer)
    try:
        verified = verify_registration_response(
            credential=answer,
            expected_challenge=challenge,
            expected_rp_id=rp_id(),
            expected_origin=origin(),
            require_user_verification=True,
        )
    except _REFUSALS as exc:
        raise PasskeyError(NOT_CHECKED) from exc
    credential_id = bytes_to_base64url(verified.credential_id)
    if db.session.scalar(select(Passkey.id).where(Passkey.credential_id == credential_id)):
        raise PasskeyError("That passkey is registered already.")
    passkey = Passkey(
        user_id=user.id,
        credential_id=credential_id,
        public_key=verified.credential_public_key,
        sign_count=verified.sign_count,
        # Checked free on the name page; taken meanwhile (another tab), it is numbered.
        name=free_name(user, name),
    )
    db.session.add(passkey)
    db.session.flush()
    record("2fa.enrolled", actor=user, subject=user, kind="passkey", passkey=passkey.name)
    return passkey


def remove(user: User, passkey_id: int, actor: User | None) -> bool:
    """Remove one of the member's passkeys (`actor`: the member, or None for support's CLI)."""
    passkey = db.session.get(Passkey, passkey_id)
    if passkey is None or passkey.user_id != user.id:
        return False
    db.session.delete(passkey)
    db.session.flush()
    from app.services.second_factor import forget_recovery_codes_if_unused

    forget_recovery_codes_if_unused(user)
    record("2fa.removed", actor=actor, subject=user, kind="passkey", passkey=passkey.name)
    return True


# -- authentication -----------------------------------------------------------------------------


def authentication_options(user: User | None, purpose: str) -> str | None:
    """The JSON options for navigator.credentials.get(): the member's passkeys (the second step;
    None, and no challenge kept, when they have none), or any discoverable passkey of this site (a
    sign-in without password: `user` None)."""
    allowed = [PublicKeyCredentialDescriptor(id=_raw(p.credential_id)) for p in passkeys_of(user)] if user else []
    if user is not None and not allowed:
        return None
    options = generate_authentication_options(
        rp_id=rp_id(),
        challenge=secrets.token_bytes(32),
        allow_credentials=allowed,
        user_verification=UserVerificationRequirement.REQUIRED
        if user is None
        else UserVerificationRequirement.PREFERRED,
    )
    _remember(options.challenge, purpose, user)
    return options_to_json(options)


def authenticate(credential_json: str, purpose: str, user: User | None = None) -> Passkey:
    """Verify the browser's answer to get(): the passkey it proves (of `user`, when given).
    Without `user` (no password) the device must have verified its user (PIN, biometrics), and
    the answer must name the passkey's member (its `userHandle`)."""
    answer = _parsed(credential_json)
    challenge = _challenge(purpose, user, answer)
    credential_id = answer.get("id")
    passkey = db.session.scalar(select(Passkey).where(Passkey.credential_id == str(credential_id)[:1400]))
    if passkey is None or (user is not None and passkey.user_id != user.id):
        raise PasskeyError(NOT_THIS_ACCOUNTS)
    if not _names_its_member(answer, passkey, required=user is None):
        raise PasskeyError(NOT_THIS_ACCOUNTS)
    try:
        verified = verify_authentication_response(
            credential=answer,
            expected_challenge=challenge,
            expected_rp_id=rp_id(),
            expected_origin=origin(),
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=user is None,
        )
    except _REFUSALS as exc:
        raise PasskeyError(NOT_CHECKED) from exc
    if not _count_grew(passkey, verified.new_sign_count):
        raise PasskeyError(NOT_CHECKED)
    return passkey


def _names_its_member(answer: dict[str, Any], passkey: Passkey, required: bool) -> bool:
    """The answer's `userHandle` is the user id this passkey was made for (WebAuthn 7.2 step 6);
    an answer without one passes only when the member is known already (`required` False)."""
    response = answer.get("response")
    handle = response.get("userHandle") if isinstance(response, dict) else None
    if not handle:
        return not required
    try:
        return isinstance(handle, str) and hmac.compare_digest(base64url_to_bytes(handle), passkey.user_id.encode())
    except _REFUSALS:
        return False


def _count_grew(passkey: Passkey, new_count: int) -> bool:
    """Store the authenticator's new signature count, only if it grew past the stored one (or both
    are 0: an authenticator that does not count), in one conditional UPDATE: of two answers with
    the same count checked at once, one stores it and the other is refused (WebAuthn 6.1.1)."""
    grew = Passkey.sign_count == 0 if new_count == 0 else Passkey.sign_count < new_count
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
        update(Passkey)
        .where(Passkey.id == passkey.id, grew)
        .values(sign_count=new_count, last_used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def _parsed(credential_json: str) -> dict[str, Any]:
    try:
        data = json.loads(credential_json or "")
    except ValueError as exc:
        raise PasskeyError("The browser sent no passkey.") from exc
    if not isinstance(data, dict):
        raise PasskeyError("The browser sent no passkey.")
    return data


def _raw(credential_id: str) -> bytes:
    return base64url_to_bytes(credential_id)
