"""The audit trail read by day, for the console's activity pictures (app/services/activity.py).
The days are grouped in the database, so a busy provider returns a few small rows; the indexes
`(client_id, created_at)` and `(action, created_at)` keep each read to the days asked for.
Grouping by UTC day is spelled per database: SQLite stores naive UTC text (`date(...)`), PostgreSQL
a zoned timestamp (app/store/postgresql.py)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select

from app.models import AuditEvent
from app.store.statements import run

_events = AuditEvent.__table__


class SqlAuditTrail:
    """Counts of audit events per UTC day."""

    def _day(self, column: Any) -> ColumnElement[str]:
        """The UTC day of a timestamp as 'YYYY-MM-DD'."""
        return func.date(column)

    def counts_per_day(
        self, actions: Collection[str], since: datetime, client_id: int | None
    ) -> list[tuple[str, str, int]]:
        """(day, action, events) for each day since `since` with events of `actions` (one app's if
        `client_id` is given)."""
        day = self._day(_events.c.created_at).label("day")
        rows = run(
            select(day, _events.c.action, func.count(_events.c.id))
            .where(_events.c.action.in_(list(actions)), *self._within(since, client_id))
            .group_by(day, _events.c.action)
        )
        return [(str(d), action, n) for d, action, n in rows]

    def actors_per_day(self, action: str, since: datetime, client_id: int | None) -> list[tuple[str, int]]:
        """(day, distinct members) who caused an `action` event each day since `since`."""
        day = self._day(_events.c.created_at).label("day")
        rows = run(
            select(day, func.count(func.distinct(_events.c.actor_id)))
            .where(_events.c.action == action, _events.c.actor_id.is_not(None), *self._within(since, client_id))
            .group_by(day)
        )
        return [(str(d), n) for d, n in rows]

    @staticmethod
    def _within(since: datetime, client_id: int | None) -> list[ColumnElement[bool]]:
        where = [_events.c.created_at >= since]
        if client_id is not None:
            where.append(_events.c.client_id == client_id)
        return where
