"""An API key's recent requests: what the console's key page lists, so a developer can see what
their key did and why a call was refused (a revoked key, a spent budget, a bad parameter).

Bounded twice: at most KEY_ACTIVITY_KEEP rows per key (the oldest go when a batch is written,
app/store/key_activity.py) and none older than KEY_ACTIVITY_DAYS (housekeeping). A row names the
key by id only; it holds the path without its query string (a query may carry search keywords,
the spec's data-use terms), never a header, a body or the key's value."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, SmallInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.extensions import Model
from app.models.base import UTCDateTime

PATH_LENGTH = 200
MESSAGE_LENGTH = 300


class KeyRequest(Model):
    """One request made with a key, answered or refused."""

    __tablename__ = "api_key_requests"
    __table_args__ = (Index("ix_api_key_requests_key_id", "key_id", "id"),)

    # BIGINT on PostgreSQL (every key request adds one); SQLite's INTEGER PRIMARY KEY is 64-bit already.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    surface: Mapped[str] = mapped_column(String(8))  # api (/v1), widget (/embed/v1), tools (the tool server)
    method: Mapped[str] = mapped_column(String(8))
    path: Mapped[str] = mapped_column(String(PATH_LENGTH))  # without the query string
    tool: Mapped[str | None] = mapped_column(String(64), nullable=True)  # a tool call's tool
    status: Mapped[int] = mapped_column(SmallInteger)
    message: Mapped[str | None] = mapped_column(String(MESSAGE_LENGTH), nullable=True)  # a refusal's reason
    request_id: Mapped[str] = mapped_column(String(128))  # the access line's, for support
