"""The `api_requests` meter in SQL: one counter row per key and UTC day (app/models/api_key.py's
`ApiUsage`). A request is counted with one upsert, `INSERT ... ON CONFLICT DO UPDATE`, which both
databases run atomically, so concurrent processes never lose a count; PostgreSQL spells the
statement with its own construct (app/store/postgresql.py). What a month costs is the services'
business (app/services/metering.py); this module only counts and reads the counters."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date

from sqlalchemy import func, select
from sqlalchemy.dialects import sqlite

from app.models import ApiUsage
from app.store.statements import run

_usage = ApiUsage.__table__


class SqlMeter:
    """The meter's counters, read and written in the caller's transaction."""

    def count(self, key_id: str, day: date) -> None:
        """One more request for `key_id` on `day`: one statement, whoever else is counting."""
        statement = sqlite.insert(_usage).values(key_id=key_id, day=day, count=1)
        run(statement.on_conflict_do_update(index_elements=["key_id", "day"], set_={"count": _usage.c.count + 1}))

    def days(self, key_ids: Collection[str], first: date, following: date) -> list[tuple[str, date, int]]:
        """(key id, day, requests) for each day in [first, following) a key made requests, by key then day."""
        if not key_ids:
            return []
        rows = run(
            select(_usage.c.key_id, _usage.c.day, _usage.c.count)
            .where(_usage.c.key_id.in_(list(key_ids)), _usage.c.day >= first, _usage.c.day < following)
            .order_by(_usage.c.key_id, _usage.c.day)
        )
        return [(key_id, day, count) for key_id, day, count in rows]

    def last_used(self, key_ids: Collection[str]) -> dict[str, date]:
        """The last UTC day each key made a request (read off the counters: no write per request)."""
        if not key_ids:
            return {}
        rows = run(
            select(_usage.c.key_id, func.max(_usage.c.day))
            .where(_usage.c.key_id.in_(list(key_ids)))
            .group_by(_usage.c.key_id)
        ).all()
        return dict(rows)
