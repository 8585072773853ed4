"""The `api_requests` meter (one upsert per request per key per day) and the month's amount by
the spec's marginal bands and plans (a pure function, in Decimal)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from app.core.extensions import db
from app.models import ApiUsage
from app.services.metering import (
    banded_amount,
    fold_meter,
    last_used,
    meter_request,
    month_amount,
    month_bounds,
    usage_for,
)
from tests.key_support import make_key


@pytest.mark.parametrize(
    "calls, amount",
    [
        (0, "0.00"),
        (1, "0.03"),
        (40, "1.00"),
        (100_000, "2500.00"),
        (100_001, "2500.02"),
        (300_000, "6500.00"),  # 100K x 0.025 + 200K x 0.020
        (300_001, "6500.02"),
        (400_000, "8000.00"),  # + 100K x 0.015
        (1_000_000, "17000.00"),
    ],
)
def test_pay_as_you_go_is_priced_in_marginal_bands(calls, amount):
    assert banded_amount(calls) == Decimal(amount)
    assert month_amount(calls, "payg") == month_amount(calls, "start") == Decimal(amount)


@pytest.mark.parametrize(
    "plan, calls, amount",
    [
        ("build", 0, "500.00"),
        ("build", 25_000, "500.00"),  # the fee covers the included calls
        ("build", 25_001, "500.02"),
        ("build", 100_000, "2000.00"),  # beyond: 0.020 a call from the first
        ("scale", 0, "3000.00"),
        ("scale", 150_000, "3000.00"),
        ("scale", 200_000, "4000.00"),
    ],
)
def test_plans_price_calls_at_0_020_and_the_fee_counts_toward_usage(plan, calls, amount):
    assert month_amount(calls, plan) == Decimal(amount)


def test_negative_usage_is_refused():
    with pytest.raises(ValueError):
        banded_amount(-1)
    with pytest.raises(ValueError):
        month_amount(-1, "build")


def test_month_bounds():
    assert month_bounds(date(2026, 12, 15)) == (date(2026, 12, 1), date(2027, 1, 1))
    assert month_bounds(date(2026, 2, 1)) == (date(2026, 2, 1), date(2026, 3, 1))


def test_a_count_per_key_and_day_bumped_by_an_upsert():
    key, _ = make_key("secret", plan="build")
    other, _ = make_key("secret")
    for day in (date(2026, 11, 3), date(2026, 11, 3), date(2026, 11, 3), date(2026, 11, 20), date(2026, 10, 31)):
        meter_request(key, day)
    meter_request(other, date(2026, 11, 3))
    db.session.commit()
    rows = db.session.execute(
        db.select(ApiUsage.day, db.func.sum(ApiUsage.count))
        .where(ApiUsage.key_id == key.id)
        .group_by(ApiUsage.day)
        .order_by(ApiUsage.day)
    ).all()
    assert rows == [(date(2026, 10, 31), 1), (date(2026, 11, 3), 3), (date(2026, 11, 20), 1)]
    usage = {u.key.id: u for u in usage_for([key, other], date(2026, 11, 10))}
    assert usage[key.id].days == [(date(2026, 11, 3), 3), (date(2026, 11, 20), 1)]
    assert usage[key.id].month_calls == 4 and usage[key.id].amount == Decimal("500.00")
    assert usage[other.id].month_calls == 1 and usage[other.id].amount == Decimal("0.03")
    assert last_used([key, other]) == {key.id: date(2026, 11, 20), other.id: date(2026, 11, 3)}


def test_fold_keeps_every_day_s_sum_in_one_row_and_leaves_yesterday_and_today_alone():
    """Shards (one per database connection on PostgreSQL) of the days before yesterday become one
    row per key and day; the sums, the usage pages and the amounts read the same before and after."""
    key, _ = make_key("secret", plan="build")
    other, _ = make_key("secret")
    old, yesterday, today = date(2026, 11, 3), date(2026, 11, 9), date(2026, 11, 10)
    db.session.add_all(
        [
            ApiUsage(key_id=key.id, day=old, shard=0, count=5),
            ApiUsage(key_id=key.id, day=old, shard=4242, count=7),
            ApiUsage(key_id=key.id, day=old, shard=4343, count=1),
            ApiUsage(key_id=other.id, day=old, shard=4242, count=2),
            ApiUsage(key_id=key.id, day=yesterday, shard=4242, count=3),
            ApiUsage(key_id=key.id, day=today, shard=4242, count=4),
        ]
    )
    db.session.commit()
    before = {u.key.id: (u.days, u.month_calls, u.amount) for u in usage_for([key, other], today)}

    assert fold_meter(today) == 3  # the three shards of Nov 3 that were not shard 0
    db.session.commit()
    rows = db.session.execute(
        db.select(ApiUsage.key_id, ApiUsage.day, ApiUsage.shard, ApiUsage.count).order_by(
            ApiUsage.day, ApiUsage.key_id == other.id
        )
    ).all()
    assert set(rows) == {
        (key.id, old, 0, 13),
        (other.id, old, 0, 2),
        (key.id, yesterday, 4242, 3),  # yesterday's and today's shards may still be counting
        (key.id, today, 4242, 4),
    }
    assert {u.key.id: (u.days, u.month_calls, u.amount) for u in usage_for([key, other], today)} == before
    assert before[key.id][0] == [(old, 13), (yesterday, 3), (today, 4)]
    assert fold_meter(today) == 0  # nothing left to fold
