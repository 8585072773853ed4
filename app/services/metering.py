"""The `api_requests` meter and what a month of it costs.

Every request an API key makes that passes the gateway (authenticated, entitled, within its
limit) counts once: one atomic upsert on a (key, UTC day) counter row (app/store/meter.py), so
concurrent processes never lose a count; on PostgreSQL each database connection has a row of its
own for the day (a shard), so no request waits on another's lock, and housekeeping folds them. Sign-in traffic (OIDC tokens, userinfo, bearer reads of `/v1`) never reaches this module.

Pricing (spec, "Metering and price constants"), in one pure function, `month_amount`:
- pay-as-you-go (and the `start` tier, which is pay-as-you-go with a faster limit): marginal bands,
  0.025 a call for the first 100,000, 0.020 up to 300,000, 0.015 beyond;
- Build: 500 a month, 25,000 calls included; Scale: 3,000 a month, 150,000 calls included. Plans
  price every call at 0.020 from the first; the plan money counts toward usage, so the month costs
  the larger of the plan fee and the calls priced at 0.020 (beyond the included calls you pay the
  excess)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from app.models import ApiKey, KeyPlan
from app.store import store

METER = "api_requests"
BANDS: tuple[tuple[int | None, Decimal], ...] = (
    (100_000, Decimal("0.025")),
    (300_000, Decimal("0.020")),
    (None, Decimal("0.015")),
)
PLAN_RATE = Decimal("0.020")
PLAN_FEES: dict[str, tuple[Decimal, int]] = {  # monthly fee, calls included
    KeyPlan.BUILD: (Decimal("500"), 25_000),
    KeyPlan.SCALE: (Decimal("3000"), 150_000),
}
CENT = Decimal("0.01")  # amounts to the cent, half a cent rounded up


def banded_amount(calls: int) -> Decimal:
    """Pay-as-you-go: each call priced by the band it falls in (marginal, like tax brackets)."""
    if calls < 0:
        raise ValueError("calls cannot be negative")
    total, floor = Decimal(0), 0
    for ceiling, rate in BANDS:
        upper = calls if ceiling is None else min(calls, ceiling)
        if upper > floor:
            total += (upper - floor) * rate
        if ceiling is None or calls <= ceiling:
            break
        floor = ceiling
    return total.quantize(CENT, rounding=ROUND_HALF_UP)


def month_amount(calls: int, plan: str) -> Decimal:
    """What a month of `calls` costs on `plan` (dollars, to the cent)."""
    if plan in PLAN_FEES:
        if calls < 0:
            raise ValueError("calls cannot be negative")
        fee, _included = PLAN_FEES[plan]
        return max(fee, calls * PLAN_RATE).quantize(CENT, rounding=ROUND_HALF_UP)
    return banded_amount(calls)


def utc_day(moment: datetime | None = None) -> date:
    return (moment or datetime.now(UTC)).astimezone(UTC).date()


def meter_request(key: ApiKey, day: date | None = None) -> None:
    """Add one request to the key's counter for `day` (today, UTC): one statement. The gateway
    commits."""
    store().meter.count(key.id, day or utc_day())


def fold_meter(today: date | None = None) -> int:
    """Fold the counters of the days before yesterday into one row per key and day (the meter keeps
    a day in shards while requests count on it: app/store/meter.py); the sums do not change. A day
    is left alone until the next has passed, so a request that began before midnight and counts
    after it never meets the fold. The rows removed; the caller commits."""
    return store().meter.fold((today or utc_day()) - timedelta(days=1))


@dataclass(frozen=True)
class KeyUsage:
    key: ApiKey
    days: list[tuple[date, int]]  # the month's days with requests, oldest first
    month_calls: int
    amount: Decimal


def month_bounds(day: date) -> tuple[date, date]:
    first = day.replace(day=1)
    following = date(first.year + (first.month == 12), first.month % 12 + 1, 1)
    return first, following


def usage_for(keys: list[ApiKey], month_of: date | None = None) -> list[KeyUsage]:
    """Each key's requests per day in the month of `month_of` (default: this UTC month), its month
    total and the month's amount on its plan: one query for all keys."""
    first, following = month_bounds(month_of or utc_day())
    per_day: dict[str, list[tuple[date, int]]] = defaultdict(list)
    for key_id, day, count in store().meter.days([k.id for k in keys], first, following):
        per_day[key_id].append((day, count))
    result = []
    for key in keys:
        days = per_day.get(key.id, [])
        calls = sum(count for _, count in days)
        result.append(KeyUsage(key, days, calls, month_amount(calls, key.plan)))
    return result


def last_used(keys: list[ApiKey]) -> dict[str, date]:
    """The last UTC day each key made a request (no extra write per request: read off the meter)."""
    return store().meter.last_used([k.id for k in keys])
