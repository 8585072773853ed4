"""The audit trail: events appended in the caller's transaction, read newest first a page at a
time (the console's audit pages), and counted by day (the console's activity pictures,
app/services/activity.py).

The days are grouped in the database, so a busy provider returns a few small rows; the indexes
`(client_id, created_at)` and `(action, created_at)` keep each read to the days asked for.
Grouping by UTC day is spelled per database: SQLite stores naive UTC text (`date(...)`), PostgreSQL
a zoned timestamp (app/store/postgresql.py). What an event holds, and that it never holds a
secret, is the audit service's rule (app/services/audit.py)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, insert, or_, select
from sqlalchemy.orm import raiseload

from app.core.extensions import db
from app.models import AuditEvent, Client
from app.store.statements import first, run

_events, _clients = AuditEvent.__table__, Client.__table__
# One statement, built once. An INSERT rather than an ORM object added to the session: the unit
# of work's bookkeeping for one row costs more than the statement, and nothing reads the event back
# in the request that writes it.
_APPEND = insert(_events)


@dataclass(frozen=True)
class EventQuery:
    """Which events a page of the trail shows; every field left None is no filter. A member
    matches the events they did and the events about them; an owner, the events of their apps."""

    client_id: int | None = None
    member_id: str | None = None
    owner_id: str | None = None
    client_ids: tuple[int, ...] | None = None  # any of these apps (what a search box found)
    member_ids: tuple[str, ...] | None = None  # any of these members
    action: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


class SqlAuditTrail:
    """Audit events: appended, paged newest first, counted per UTC day."""

    def append(self, row: dict[str, object]) -> None:
        """Write one event (its columns: app/services/audit.py's `event_row`) in the caller's
        transaction, so it commits with the change it describes or not at all."""
        first(_APPEND, row)

    def newest(self, query: EventQuery, offset: int, limit: int) -> list[AuditEvent]:
        """Up to `limit` events matching `query`, newest first, after skipping `offset`. The app an
        event names is not loaded with it (`raiseload`): the caller reads apps through the apps port."""
        e = AuditEvent
        stmt = select(e).options(raiseload(e.client)).order_by(e.created_at.desc(), e.id.desc())
        if query.owner_id is not None:
            stmt = stmt.where(e.client_id.in_(select(_clients.c.id).where(_clients.c.owner_id == query.owner_id)))
        if query.client_id is not None:
            stmt = stmt.where(e.client_id == query.client_id)
        if query.client_ids is not None:
            stmt = stmt.where(e.client_id.in_(query.client_ids))
        if query.member_id is not None:
            stmt = stmt.where(or_(e.actor_id == query.member_id, e.subject_id == query.member_id))
        if query.member_ids is not None:
            stmt = stmt.where(or_(e.actor_id.in_(query.member_ids), e.subject_id.in_(query.member_ids)))
        if query.action is not None:
            stmt = stmt.where(e.action == query.action)
        if query.since is not None:
            stmt = stmt.where(e.created_at >= query.since)
        if query.until is not None:
            stmt = stmt.where(e.created_at < query.until)
        return list(db.session.scalars(stmt.offset(offset).limit(limit)))

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
