"""The audit trail: who did what, when, from where, to which app. Append-only; never a secret.

`actor` is who acted (a member signing in, a developer editing an app, an admin); `subject` is
the member the event is about when that is someone else (an admin changing a member's role).
The actor's email is copied so the line still reads right if the member later changes it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class AuditEvent(Model):
    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_client_created", "client_id", "created_at"),
        Index("ix_audit_events_actor_created", "actor_id", "created_at"),
        Index("ix_audit_events_subject_created", "subject_id", "created_at"),
        # the audit log's event-type filter and the activity pictures (migration 0010)
        Index("ix_audit_events_action_created", "action", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    action: Mapped[str] = mapped_column(String(40))  # e.g. signin.failed, app.deleted (see app.services.audit)
    actor_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    actor_email: Mapped[str | None] = mapped_column(String(254), nullable=True)
    subject_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    client_id: Mapped[int | None] = mapped_column(ForeignKey("clients.id", ondelete="SET NULL"), nullable=True)
    ip: Mapped[str | None] = mapped_column(String(64), nullable=True)
    source: Mapped[str] = mapped_column(String(8), default="web")  # web | cli
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # small, non-secret facts (scopes, kid, grace)

    client = relationship("Client", lazy="joined")
    subject = relationship("User", foreign_keys=[subject_id], lazy="joined")
