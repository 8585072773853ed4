"""Activity per day for the console's pictures: sign-ins, consents granted and active members
(distinct members with a sign-in that day), for the last 30 days, of one app or of the whole
provider. Read from the audit trail (`signin.ok`, `consent.granted`), whose indexes
`(client_id, created_at)` and `(action, created_at)` keep each read to the 30 days asked for;
the days are grouped in the database, so a busy provider returns at most 90 small rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from app.models.base import utcnow
from app.store import store

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


def activity(client_id: int | None = None, now: datetime | None = None, days: int = DAYS) -> Activity:
    """Per-day counts for the last `days` days, today (UTC) included; one app's when `client_id`
    is given, else the provider's."""
    today = (now or utcnow()).date()
    first = today - timedelta(days=days - 1)
    since = datetime(first.year, first.month, first.day, tzinfo=(now or utcnow()).tzinfo)
    trail = store().audit
    found: dict[tuple[str, str], int] = {
        (day, action): n for day, action, n in trail.counts_per_day((SIGN_IN, CONSENT), since, client_id)
    }
    active = dict(trail.actors_per_day(SIGN_IN, since, client_id))
    calendar = [first + timedelta(days=n) for n in range(days)]

    def series(key: str, label: str, unit: str, read: Callable[[str], int]) -> Series:
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
