"""A pending authorization request, parked while the member logs in or consents.

`/authorize` validates the request, stores its parameters here and hands the browser a
reference to this row (never the parameters themselves) - the node-oidc-provider pattern."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class Interaction(Model):
    __tablename__ = "interactions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # random reference (uid)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)  # the validated authorization request
    # SHA-256 of a random id held in the browser's signed cookie: only the browser that
    # started the request can finish it.
    browser_hash: Mapped[str] = mapped_column(String(64))
    # Set when a login happened inside this interaction (satisfies prompt=login / max_age).
    login_session_id: Mapped[int | None] = mapped_column(
        ForeignKey("login_sessions.id", ondelete="SET NULL"), nullable=True
    )
    # The member the request is for, once one is signed in: disconnecting the app closes it.
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    consumed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    client = relationship("Client", lazy="joined")

    def is_open(self, now: datetime | None = None) -> bool:
        return self.consumed_at is None and (now or utcnow()) < self.expires_at
