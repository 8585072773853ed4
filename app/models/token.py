"""Access and refresh tokens: opaque random strings, stored as SHA-256 hashes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class Token(Model):
    """One issued pair. Rotation marks the old row's refresh as used and adds a new row with the
    same `grant_id`; reuse of a used refresh token revokes every row of that grant. The rules a
    token answers to are its record's, app/store/tokens.py's StoredToken: this class maps the
    table for Alembic and for the tests that look at rows."""

    __tablename__ = "tokens"
    __table_args__ = (Index("ix_tokens_user_client", "user_id", "client_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    # No index of its own: ix_tokens_user_client, led by user_id, serves lookups by member.
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    grant_id: Mapped[str] = mapped_column(String(36), index=True)
    scope: Mapped[str] = mapped_column(Text, default="")
    access_token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    refresh_token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    issued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    access_expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    refresh_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    refresh_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The resource (RFC 8707) the grant is bound to: the tool server's URL, or None for the
    # provider's own APIs (userinfo, /v1). Tokens are accepted only where they are bound.
    resource: Mapped[str | None] = mapped_column(String(500), nullable=True)
    # The member's login time, carried from the code so refreshed ID tokens keep auth_time.
    auth_time: Mapped[datetime] = mapped_column(UTCDateTime)
    # How the member signed in, carried from the code so refreshed ID tokens keep amr and acr.
    amr: Mapped[str] = mapped_column(String(32), default="pwd", server_default="pwd")

    client = relationship("Client", lazy="joined")
    user = relationship("User", lazy="joined")
