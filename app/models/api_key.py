"""API keys of the platform's own door (the catalog REST API and the widget API), and the meter.

A key is `msk_` (secret: server-side, the full `/v1` catalog API), `mpk_` (publishable: read-only
profile, credits and charts through the widget API `/embed/v1`, locked to registered domains) or
`mwk_` (workspace: read-only profile, credits, charts and collaborators on `/v1` of the profiles on
one roster of its owner, issued on the member's account page), followed by 256 random bits. Only the SHA-256 of the key is stored (as client secrets and tokens
are): lookup is one indexed equality, and a copy of the database lets nobody call the API. The
first characters are kept in clear (`prefix`) so the console can tell keys apart.

The meter `api_requests` is one counter row per key per UTC day, bumped with one upsert per
request: cheap to write, and a month's usage is a sum over at most 31 rows per key."""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum

from sqlalchemy import JSON, Date, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.extensions import Model
from app.models.base import UTCDateTime, new_uuid, utcnow
from app.models.user import User


class KeyKind(StrEnum):
    SECRET = "secret"  # msk_: the full paid API, from any origin
    PUBLISHABLE = "publishable"  # mpk_: widget API only, from registered domains
    WORKSPACE = "workspace"  # mwk_: /v1 profile reads of one roster's profiles (the account page's)


class KeyPlan(StrEnum):
    PAYG = "payg"  # pay-as-you-go: 300 per minute
    START = "start"  # 5 per second
    BUILD = "build"  # 25 per second, 500/month with 25,000 calls included
    SCALE = "scale"  # 100 per second, 3,000/month with 150,000 calls included
    WORKSPACE = "workspace"  # workspace keys: 60 per minute and at most 10,000 a day


class ApiKey(Model):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    kind: Mapped[str] = mapped_column(String(16))
    plan: Mapped[str] = mapped_column(String(16), default=KeyPlan.PAYG.value)
    # `msk_` + the first 8 characters of the random part: enough to recognise a key, useless to use it.
    prefix: Mapped[str] = mapped_column(String(16))
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # After a rotation with a grace period the previous key keeps working until it expires.
    previous_secret_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    previous_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Publishable keys: the host names (`example.com`, `app.example.com:8443`) pages may call from.
    domains: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Workspace keys: the roster whose profiles the key reaches (NULL once the roster is deleted,
    # which revokes the key first).
    roster_id: Mapped[str | None] = mapped_column(
        ForeignKey("rosters.id", ondelete="SET NULL"), nullable=True, index=True
    )
    # Enterprise terms (app/services/billing/enterprise.py): limits an admin set for this key, in
    # place of its plan's; NULL = the plan's.
    custom_per_minute: Mapped[int | None] = mapped_column(Integer, nullable=True)
    custom_per_second: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    rotated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    owner: Mapped[User] = relationship()

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def is_publishable(self) -> bool:
        return self.kind == KeyKind.PUBLISHABLE

    @property
    def is_workspace(self) -> bool:
        return self.kind == KeyKind.WORKSPACE

    @property
    def is_paused(self) -> bool:
        """Stopped for now by its owner's standing: suspended, or (a console key) no longer a
        developer or admin; a workspace key belongs to any member, so only a suspension pauses it.
        It works again when that ends (a suspension lifted, the role given back); to stop a key
        for good, revoke it."""
        return self.owner.is_suspended or (not self.is_workspace and not self.owner.holds_api_keys)

    @property
    def status(self) -> str:
        """`revoked` (for good), `paused` (is_paused) or `active`: what the console and the CLI say."""
        if self.is_revoked:
            return "revoked"
        return "paused" if self.is_paused else "active"


class ApiUsage(Model):
    """The `api_requests` meter: requests a key made on one UTC day, in one or more shards whose
    sum is the day's count. On PostgreSQL each database connection counts in a shard of its own
    (app/store/postgresql.py), so no request waits on another's row lock; elsewhere, and once
    housekeeping has folded a past day, there is one shard, 0."""

    __tablename__ = "api_usage"

    key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    shard: Mapped[int] = mapped_column(Integer, primary_key=True, default=0, server_default="0")
    count: Mapped[int] = mapped_column(Integer, default=0)
