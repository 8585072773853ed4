"""Activity per day for the console's pictures: sign-ins, consents granted and active members
(distinct members with a sign-in that day), for the last 30 days, of one app or of the whole
provider. Read from the audit trail (`signin.ok`, `consent.granted`), whose indexes
`(client_id, created_at)` and `(action, created_at)` keep each read to the 30 days asked for;
the days are grouped in the database, so a busy provider returns at most 90 small rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import func, literal_column, select

from app.core.extensions import db
from app.models import AuditEvent
from app.models.base import utcnow

DAYS = 30
SIGN_IN, CONSENT = "signin.ok", "consent.granted"


@dataclass(frozen=True)
class Series:
    key: str
    label: str  # e.g. "Sign-ins"
    unit: str  # e.g. "sign-in", for "3 sign-ins on 24 Nov"
    days: list[date]
    values: list[int]

    @property
    def total(self) -> int:
        return sum(self.values)


@dataclass(frozen=True)
class Activity:
    first: date
    last: date
    series: list[Series]


def _day(column):
    """The UTC day of a timestamp as 'YYYY-MM-DD', on SQLite (naive UTC text) and PostgreSQL."""
    if db.engine.dialect.name == "postgresql":
        # literals, not bound parameters: the same expression in SELECT and GROUP BY must be
        # identical for PostgreSQL, and two binds ($1, $3) would make them differ
        return func.to_char(func.timezone(literal_column("'UTC'"), column), literal_column("'YYYY-MM-DD'"))
    return func.date(column)


def activity(client_id: int | None = None, now: datetime | None = None, days: int = DAYS) -> Activity:
    """Per-day counts for the last `days` days, today (UTC) included; one app's when `client_id`
    is given, else the provider's."""
    today = (now or utcnow()).date()
    first = today - timedelta(days=days - 1)
    since = datetime(first.year, first.month, first.day, tzinfo=(now or utcnow()).tzinfo)
    day = _day(AuditEvent.created_at).label("day")
    where = [AuditEvent.created_at >= since]
    if client_id is not None:
        where.append(AuditEvent.client_id == client_id)
    counts = db.session.execute(
        select(day, AuditEvent.action, func.count(AuditEvent.id))
        .where(AuditEvent.action.in_((SIGN_IN, CONSENT)), *where)
        .group_by(day, AuditEvent.action)
    ).all()
    members = db.session.execute(
        select(day, func.count(func.distinct(AuditEvent.actor_id)))
        .where(AuditEvent.action == SIGN_IN, AuditEvent.actor_id.is_not(None), *where)
        .group_by(day)
    ).all()
    calendar = [first + timedelta(days=n) for n in range(days)]
    found: dict[tuple[str, str], int] = {(str(d), a): n for d, a, n in counts}
    active = {str(d): n for d, n in members}

    def series(key: str, label: str, unit: str, read) -> Series:
        return Series(key, label, unit, calendar, [read(d.isoformat()) for d in calendar])

    return Activity(
        first,
        today,
        [
            series("signins", "Sign-ins", "sign-in", lambda d: found.get((d, SIGN_IN), 0)),
            series("consents", "Consents granted", "consent", lambda d: found.get((d, CONSENT), 0)),
            series("members", "Active members", "active member", lambda d: active.get(d, 0)),
        ],
    )
