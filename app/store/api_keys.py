"""API keys in the store: the key a request presents, found by its value's hash in one indexed read
with its owner; the keys the console, the account page and the command line manage; and the
changes they make. The record is the ORM class (app/models/api_key.py), which carries a key's
rules (revoked, paused, publishable); every change here is flushed, and the caller commits.

What a key may do, its limits, and the checks before a change are the API key service's
(app/services/apikeys.py)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import Session, joinedload

from app.core.extensions import db
from app.models import ApiKey, KeyKind
from app.store.unit_of_work import unit_of_work

# Built once: every request through the key door runs it (SQLAlchemy caches its compiled form).
# A key's current value or, inside a rotation's grace, its previous one: both columns are indexed.
_BY_DIGEST = (
    select(ApiKey)
    .options(joinedload(ApiKey.owner))
    .where(or_(ApiKey.secret_hash == bindparam("digest"), ApiKey.previous_secret_hash == bindparam("digest")))
)
_NEWEST_FIRST = (ApiKey.created_at.desc(), ApiKey.id)


class SqlApiKeys:
    """API keys: found, listed, added and changed."""

    def by_digest(self, digest: str) -> ApiKey | None:
        """The key whose value (current or previous) hashes to `digest`, its owner loaded with it,
        whatever its state: the caller judges it. A read-only copy, outside the request's session:
        the door reads it and never changes it, and on PostgreSQL the same copy serves later requests
        (app/store/row_cache.py), so it must not be tied to one request's session - read through a
        session of its own on the request's connection (its transaction, if any, left as it was)."""
        with Session(bind=unit_of_work().connection(), join_transaction_mode="rollback_only") as reader:
            key: ApiKey | None = reader.scalar(_BY_DIGEST, {"digest": digest})
        return key

    def by_id(self, key_id: str) -> ApiKey | None:
        return db.session.get(ApiKey, key_id[:36])

    def names(self, key_ids: Collection[str]) -> dict[str, tuple[str, str]]:
        """(name, prefix) of each of `key_ids` that exists (a statement's lines)."""
        if not key_ids:
            return {}
        rows = db.session.execute(select(ApiKey.id, ApiKey.name, ApiKey.prefix).where(ApiKey.id.in_(list(key_ids))))
        return {key_id: (name, prefix) for key_id, name, prefix in rows}

    def console_keys(self, owner_id: str | None) -> list[ApiKey]:
        """Developers' keys (not workspace keys), newest first: one owner's, or everyone's (None)."""
        stmt = select(ApiKey).where(ApiKey.kind != KeyKind.WORKSPACE).order_by(*_NEWEST_FIRST)
        if owner_id is not None:
            stmt = stmt.where(ApiKey.owner_id == owner_id)
        return list(db.session.scalars(stmt))

    def every_key(self, owner_id: str | None) -> list[ApiKey]:
        """Every key of any kind, newest first: one owner's, or everyone's (None). For support."""
        stmt = select(ApiKey).order_by(*_NEWEST_FIRST)
        if owner_id is not None:
            stmt = stmt.where(ApiKey.owner_id == owner_id)
        return list(db.session.scalars(stmt))

    def of_roster(self, roster_id: str) -> list[ApiKey]:
        """A roster's workspace keys, newest first, revoked ones too."""
        stmt = (
            select(ApiKey)
            .where(ApiKey.roster_id == roster_id, ApiKey.kind == KeyKind.WORKSPACE)
            .order_by(*_NEWEST_FIRST)
        )
        return list(db.session.scalars(stmt))

    def add(self, values: dict[str, Any]) -> ApiKey:
        """A new key with these columns (its id drawn here)."""
        key = ApiKey(**values)
        db.session.add(key)
        db.session.flush()
        return key

    def change(self, key: ApiKey, values: dict[str, Any]) -> None:
        """Set these columns of `key` (name, domains, hashes, times)."""
        for column, value in values.items():
            setattr(key, column, value)
        db.session.flush()

    def revoke(self, key: ApiKey, at: datetime) -> None:
        """Stop the key and any previous value a rotation left in its grace."""
        self.change(key, {"revoked_at": at, "previous_secret_hash": None, "previous_expires_at": None})
