"""One-time links sent by mail: password reset, email verification, invitation to set a password.

The link carries a random token (`secrets.token_urlsafe(32)`); only its SHA-256 is stored. A link
works once (consumed by a conditional UPDATE on `used_at IS NULL`), until `expires_at`, and only
while it is the newest of its purpose for the member (issuing one deletes the older ones). One
table for the three purposes: the rules are the same, only the lifetime and the page differ."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class LinkPurpose(StrEnum):
    RESET = "reset"  # set a new password (forgot password)
    VERIFY = "verify"  # prove the member reads `email` (sign-up address or a new address)
    INVITE = "invite"  # a member created by an admin sets a first password (verifies the address too)


class OneTimeLink(Model):
    __tablename__ = "one_time_links"
    __table_args__ = (Index("ix_one_time_links_user_id_purpose", "user_id", "purpose"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    purpose: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 of the link's token
    # The address the link was sent to: for a verification, the (new) address it proves.
    email: Mapped[str] = mapped_column(String(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    user = relationship("User", lazy="joined")
