"""Authorization codes: single-use, short-lived, stored only as a hash."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, utcnow


class AuthorizationCode(Model):
    """A code as stored (its rules are its record's, app/store/codes.py's RedeemedCode)."""

    __tablename__ = "authorization_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("clients.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    # Every token descended from this code carries the same grant id (the "family").
    grant_id: Mapped[str] = mapped_column(String(36), index=True)
    # The redirect_uri the request carried (None when omitted): the token request must repeat it.
    redirect_uri: Mapped[str | None] = mapped_column(Text, nullable=True)
    scope: Mapped[str] = mapped_column(Text, default="")
    nonce: Mapped[str | None] = mapped_column(Text, nullable=True)
    code_challenge: Mapped[str | None] = mapped_column(String(128), nullable=True)
    code_challenge_method: Mapped[str | None] = mapped_column(String(8), nullable=True)
    # The member's real login time (the ID token's auth_time) - not the code's issue time.
    auth_time: Mapped[datetime] = mapped_column(UTCDateTime)
    # How the member signed in (the ID token's amr, and acr derived from it), from the login session.
    amr: Mapped[str] = mapped_column(String(32), default="pwd", server_default="pwd")
    issued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The resource (RFC 8707) the grant is bound to: the tool server's URL, or None for the
    # provider's own APIs (userinfo, /v1). Tokens are accepted only where they are bound.
    resource: Mapped[str | None] = mapped_column(String(500), nullable=True)

    client = relationship("Client", lazy="joined")
    user = relationship("User", lazy="joined")
