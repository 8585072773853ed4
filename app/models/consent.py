"""Remembered consents: which scopes a member granted to which app."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class Consent(Model):
    __tablename__ = "consents"
    __table_args__ = (UniqueConstraint("user_id", "client_id", name="uq_consents_user_client"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    # No index of its own: uq_consents_user_client, led by user_id, serves lookups by member.
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    scope: Mapped[str] = mapped_column(Text, default="")
    granted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    client = relationship("Client")
