"""Signing-key metadata. The private key lives in KEYS_DIR (mode 0600), never in the database.

A key's state follows from its timestamps, so every process derives the same answer:
  next     - published, not yet signing (now < activates_at)
  active   - the newest activated key that is not retired: it signs
  retired  - no longer signs, still published until `expires_at` (every token it signed expired)
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.capabilities import SIGNING_ALG
from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class KeyRules:
    """A key's state from its timestamps, for the ORM model (the CLI's and the console's changes) and
    the key store's read-only copy (`app.protocol.jwks.KeyInfo`) alike: one place per rule."""

    if TYPE_CHECKING:  # the columns the rules read (declared by each class that carries them)
        kid: str
        activates_at: datetime
        retired_at: datetime | None
        expires_at: datetime | None

    def is_published(self, now: datetime) -> bool:
        return self.expires_at is None or now < self.expires_at

    def can_sign(self, now: datetime) -> bool:
        return self.activates_at <= now and (self.retired_at is None or now < self.retired_at)

    def state(self, now: datetime, active_kid: str | None) -> str:
        if self.retired_at is not None and self.retired_at <= now:
            return "retired"  # including a waiting key withdrawn by an emergency rotation
        if now < self.activates_at:
            return "next"
        if self.kid == active_kid:
            return "active"
        return "retired"


class SigningKey(Model, KeyRules):
    __tablename__ = "signing_keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    alg: Mapped[str] = mapped_column(String(16), default=SIGNING_ALG)
    public_jwk: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    activates_at: Mapped[datetime] = mapped_column(UTCDateTime)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
