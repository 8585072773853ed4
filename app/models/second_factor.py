"""Second factors: an authenticator app (TOTP, RFC 6238) and the recovery codes that stand in for
it when the phone is lost.

The TOTP secret must be readable to check a code, so it is sealed (AES-256-GCM under a key derived
from SECRET_KEY, bound to the member) rather than hashed. Recovery codes are 80-bit random values,
stored as SHA-256 like every other high-entropy secret, and each works once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class TotpFactor(Model):
    __tablename__ = "totp_factors"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    secret_sealed: Mapped[bytes] = mapped_column(LargeBinary)  # nonce + AES-GCM ciphertext of the base32 secret
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Set once the member typed a first code from the app: until then it is an enrollment in progress.
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The 30-second step of the last accepted code: a code is accepted once (no replay).
    last_used_step: Mapped[int | None] = mapped_column(Integer, nullable=True)


class RecoveryCode(Model):
    __tablename__ = "recovery_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Passkey(Model):
    """A WebAuthn credential (a passkey or a security key): a second factor after the password, and
    a sign-in of its own (it is discoverable and asks for the device's PIN or biometrics). Only the
    public key is stored."""

    __tablename__ = "passkeys"
    # Told apart by name (the account page, the removal confirmation, security notices).
    __table_args__ = (UniqueConstraint("user_id", "name", name="uq_passkeys_user_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    credential_id: Mapped[str] = mapped_column(String(1400), unique=True)  # base64url, as browsers send it
    public_key: Mapped[bytes] = mapped_column(LargeBinary)  # COSE
    sign_count: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
