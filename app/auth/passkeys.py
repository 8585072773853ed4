"""Passkeys (WebAuthn, via the `webauthn` package): registered on the account page, then used as the
second step after the password, or on their own to sign in without a password.

The relying-party id is the issuer's host name and the expected origin the issuer's origin, so a
passkey works only on this issuer (browsers refuse an IP address as relying-party id: a local run
uses http://localhost:5000 for passkeys). Passkeys are made discoverable and ask the device for its
PIN or biometrics (user verification), so a passkey sign-in alone proves two factors: `amr` is
`hwk` and `acr` multi-factor. Each ceremony's challenge is kept in the browser's signed session
cookie, used once, for five minutes. Only public keys are stored. Services only flush.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, session
from sqlalchemy import func, select
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import bytes_to_base64url
from webauthn.helpers.exceptions import InvalidAuthenticationResponse, InvalidRegistrationResponse
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from app.audit import record
from app.extensions import db
from app.models import Passkey, User
from app.models.base import utcnow

CHALLENGE_KEY = "webauthn"  # session key: {"c": challenge, "t": issued, "p": purpose}
CHALLENGE_LIFETIME = 300
MAX_PASSKEYS = 10
RP_NAME = "Credits ID"


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


def count(user: User) -> int:
    return db.session.scalar(select(func.count()).select_from(Passkey).where(Passkey.user_id == user.id)) or 0


def _remember(challenge: bytes, purpose: str) -> None:
    session[CHALLENGE_KEY] = {"c": bytes_to_base64url(challenge), "t": int(time.time()), "p": purpose}


def _challenge(purpose: str) -> bytes:
    """The pending ceremony's challenge, used up here (a replayed answer finds none)."""
    from webauthn import base64url_to_bytes

    data = session.pop(CHALLENGE_KEY, None)
    if not isinstance(data, dict) or data.get("p") != purpose or time.time() - data.get("t", 0) > CHALLENGE_LIFETIME:
        raise PasskeyError("The passkey request expired. Try again.")
    return base64url_to_bytes(data["c"])


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
    _remember(options.challenge, "register")
    return options_to_json(options)


def register(user: User, credential_json: str, name: str) -> Passkey:
    """Verify the browser's answer to create() and keep the new passkey (its public key)."""
    try:
        verified = verify_registration_response(
            credential=_parsed(credential_json),
            expected_challenge=_challenge("register"),
            expected_rp_id=rp_id(),
            expected_origin=origin(),
            require_user_verification=True,
        )
    except (InvalidRegistrationResponse, ValueError, KeyError, TypeError) as exc:
        raise PasskeyError("The passkey could not be checked. Try again.") from exc
    credential_id = bytes_to_base64url(verified.credential_id)
    if db.session.scalar(select(Passkey.id).where(Passkey.credential_id == credential_id)):
        raise PasskeyError("That passkey is registered already.")
    passkey = Passkey(
        user_id=user.id,
        credential_id=credential_id,
        public_key=verified.credential_public_key,
        sign_count=verified.sign_count,
        name=(name or "").strip()[:64] or "Passkey",
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
    from app.auth.second_factor import forget_recovery_codes_if_unused

    forget_recovery_codes_if_unused(user)
    record("2fa.removed", actor=actor, subject=user, kind="passkey", passkey=passkey.name)
    return True


# -- authentication -----------------------------------------------------------------------------


def authentication_options(user: User | None, purpose: str) -> str:
    """The JSON options for navigator.credentials.get(): the member's passkeys (the second step),
    or any discoverable passkey of this site (a sign-in without password: `user` None)."""
    allowed = [PublicKeyCredentialDescriptor(id=_raw(p.credential_id)) for p in passkeys_of(user)] if user else []
    options = generate_authentication_options(
        rp_id=rp_id(),
        challenge=secrets.token_bytes(32),
        allow_credentials=allowed,
        user_verification=UserVerificationRequirement.REQUIRED
        if user is None
        else UserVerificationRequirement.PREFERRED,
    )
    _remember(options.challenge, purpose)
    return options_to_json(options)


def authenticate(credential_json: str, purpose: str, user: User | None = None) -> Passkey:
    """Verify the browser's answer to get(): the passkey it proves (of `user`, when given).
    Without `user` (no password) the device must have verified its user (PIN, biometrics)."""
    data = _parsed(credential_json)
    challenge = _challenge(purpose)
    credential_id = data.get("id") if isinstance(data, dict) else None
    passkey = db.session.scalar(select(Passkey).where(Passkey.credential_id == str(credential_id)[:1400]))
    if passkey is None or (user is not None and passkey.user_id != user.id):
        raise PasskeyError("That passkey is not registered for this account.")
    try:
        verified = verify_authentication_response(
            credential=data,
            expected_challenge=challenge,
            expected_rp_id=rp_id(),
            expected_origin=origin(),
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=user is None,
        )
    except (InvalidAuthenticationResponse, ValueError, KeyError, TypeError) as exc:
        raise PasskeyError("The passkey could not be checked. Try again.") from exc
    passkey.sign_count, passkey.last_used_at = verified.new_sign_count, utcnow()
    return passkey


def _parsed(credential_json: str) -> dict[str, Any]:
    try:
        data = json.loads(credential_json or "")
    except ValueError as exc:
        raise PasskeyError("The browser sent no passkey.") from exc
    if not isinstance(data, dict):
        raise PasskeyError("The browser sent no passkey.")
    return data


def _raw(credential_id: str) -> bytes:
    from webauthn import base64url_to_bytes

    return base64url_to_bytes(credential_id)
