"""Column types and helpers shared by every model."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import UTC, datetime

from sqlalchemy import DateTime, Dialect
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_uuid() -> str:
    return str(uuid.uuid4())


def new_secret(nbytes: int = 32) -> str:
    """A high-entropy opaque value (codes, tokens, client secrets, session ids)."""
    return secrets.token_urlsafe(nbytes)


def sha256_hex(value: str) -> str:
    """How high-entropy secrets are stored: SHA-256 is enough for 256-bit random values (no
    dictionary to attack), and it keeps the lookup a single indexed equality."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
