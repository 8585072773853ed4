"""Provider sessions: the signed cookie carries a random id, this row carries the rest, so a
session can be ended from the server (sign out everywhere, revocation)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class LoginSession(Model):
    __tablename__ = "login_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    session_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 of the cookie's id
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    auth_time: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ip: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_agent: Mapped[str | None] = mapped_column(String(300), nullable=True)
    # The last time the session was used to sign in to an app or to open the account page (not
    # every request: that would be a write per page view).
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # How the member proved who they are (RFC 8176 values, space-separated): "pwd", "pwd otp".
    amr: Mapped[str] = mapped_column(String(32), default="pwd", server_default="pwd")

    user = relationship("User", lazy="joined")
