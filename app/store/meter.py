"""The `api_requests` meter in SQL: counter rows per key and UTC day (app/models/api_key.py's
`ApiUsage`), a day's count being the sum of its shards. A request is counted with one upsert,
`INSERT ... ON CONFLICT DO UPDATE`, which both databases run atomically, so concurrent processes
never lose a count. Here (SQLite, which serializes writers anyway) every count goes to shard 0;
PostgreSQL's variant (app/store/postgresql.py) gives each database connection a shard of its own,
so two requests never wait on one row's lock, and commits a count on its own when the request has
written nothing else. What a month costs is the services' business (app/services/metering.py);
this module only counts, reads and folds the counters."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from datetime import date
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects import sqlite

from app.models import ApiUsage
from app.store.statements import run

_usage = ApiUsage.__table__
FOLDED = 0  # the shard a folded day keeps its count in (and SQLite's only one)


def adding(statement: Any) -> Any:
    """`statement` (a dialect's INSERT of a counter row) adding its count to the row already there."""
    return statement.on_conflict_do_update(
        index_elements=["key_id", "day", "shard"], set_={"count": _usage.c.count + statement.excluded.count}
    )


class SqlMeter:
    """The meter's counters, read and written in the caller's transaction."""

    def count(self, key_id: str, day: date) -> None:
        """One more request for `key_id` on `day`: one statement, whoever else is counting."""
        self._add(key_id, day, 1)

    def _add(self, key_id: str, day: date, calls: int) -> None:
        run(adding(sqlite.insert(_usage).values(key_id=key_id, day=day, shard=FOLDED, count=calls)))

    def days(self, key_ids: Collection[str], first: date, following: date) -> list[tuple[str, date, int]]:
        """(key id, day, requests) for each day in [first, following) a key made requests, by key then day."""
        if not key_ids:
            return []
        rows = run(
            select(_usage.c.key_id, _usage.c.day, func.sum(_usage.c.count))
            .where(_usage.c.key_id.in_(list(key_ids)), _usage.c.day >= first, _usage.c.day < following)
            .group_by(_usage.c.key_id, _usage.c.day)
            .order_by(_usage.c.key_id, _usage.c.day)
        )
        return [(key_id, day, int(count)) for key_id, day, count in rows]

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

    def fold(self, before: date) -> int:
        """Fold the shards of the days before `before` into one row per key and day (shard 0), in
        the caller's transaction: the sums are unchanged, the rows fewer. Only past days, which no
        request counts on any more, so no request waits on the rows this locks. The rows removed."""
        gone = run(
            delete(_usage)
            .where(_usage.c.day < before, _usage.c.shard != FOLDED)
            .returning(_usage.c.key_id, _usage.c.day, _usage.c.count)
        ).all()
        sums: dict[tuple[str, date], int] = defaultdict(int)
        for key_id, day, count in gone:
            sums[(key_id, day)] += count
        for (key_id, day), calls in sorted(sums.items()):
            self._add(key_id, day, calls)
        return len(gone)
