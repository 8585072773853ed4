"""What calls cost, as the ledger posts them: bands, plans, the one rounding rule (no database)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from app.services.billing.pricing import PLAN_BAND, MonthSoFar, list_price, price, to_cent
from app.services.metering import banded_amount

D = Decimal


def total(lines) -> Decimal:
    return sum((line.amount for line in lines), D("0.00"))


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        (0, "0.00"),
        (1, "0.03"),  # 0.025 rounds half up
        (99_999, "2499.98"),  # 2499.975 rounds half up
        (100_000, "2500.00"),
        (100_001, "2500.02"),  # the 100,001st call at 0.020
        (300_000, "6500.00"),  # 2,500 + 200,000 x 0.020
        (300_001, "6500.02"),  # 6500.015 rounds half up
        (300_002, "6500.03"),
    ],
)
def test_band_edges(calls, expected):
    lines = price([("k", date(2026, 3, 1), calls)], MonthSoFar(), False, D(0))
    assert total(lines) == D(expected) == banded_amount(calls)


def test_a_day_across_a_band_edge_is_split_into_one_line_per_band():
    state = MonthSoFar(band_calls=99_990, band_exact=D("2499.75"))
    lines = price([("k", date(2026, 3, 9), 310_020)], state, False, D(0))
    assert [(line.band, line.calls, line.rate) for line in lines] == [
        (1, 10, D("0.025")),
        (2, 200_000, D("0.020")),
        (3, 110_010, D("0.015")),
    ]
    assert state.band_calls == 410_010


def test_rounding_is_cumulative_so_a_month_adds_up_to_its_price_rounded_once():
    """Thirty days of 3 calls on two keys: each line alone would round 0.075 up to 0.08 (4.80 in
    all); cumulatively the month is 180 calls = 4.50, as banded_amount says."""
    rows = [(key, date(2026, 4, day), 3) for day in range(1, 31) for key in ("a", "b")]
    lines = price(rows, MonthSoFar(), False, D(0))
    assert total(lines) == banded_amount(180) == D("4.50")
    assert {line.amount for line in lines} <= {D("0.07"), D("0.08")}


def test_posting_in_several_runs_adds_up_as_one():
    rows = [("k", date(2026, 5, day), 33_333) for day in range(1, 11)]
    at_once = total(price(rows, MonthSoFar(), False, D(0)))
    state, split = MonthSoFar(), D(0)
    for row in rows:
        posted = price([row], state, False, D(0))
        split += total(posted)
    assert split == at_once == banded_amount(333_330)


def test_on_a_plan_calls_are_drawn_only_beyond_the_plan_money():
    """Build: 500 covers 25,000 calls at 0.020; the 25,001st costs 0.02."""
    state = MonthSoFar()
    covered = price([("k", date(2026, 6, 1), 25_000)], state, True, D("500.00"))
    assert covered[0].band == PLAN_BAND and covered[0].amount == D("0.00") and covered[0].calls == 25_000
    beyond = price([("k", date(2026, 6, 2), 1)], state, True, D("500.00"))
    assert beyond[0].amount == D("0.02")
    scale = price([("k", date(2026, 6, 1), 150_001)], MonthSoFar(), True, D("3000.00"))
    assert total(scale) == D("0.02")


def test_plan_money_paid_later_in_the_month_counts_from_then_on():
    state = MonthSoFar()
    before = price([("k", date(2026, 6, 1), 1_000)], state, True, D("0"))
    assert total(before) == D("20.00")
    after = price([("k", date(2026, 6, 2), 1_000)], state, True, D("500.00"))
    assert total(after) == D("0.00")  # nothing drawn while the month's calls stay within the money


def test_list_price_and_the_rounding_rule():
    assert list_price(300_001, False) == D("6500.02") and list_price(25_001, True) == D("500.02")
    assert to_cent(D("0.005")) == D("0.01") and to_cent(D("0.0049")) == D("0.00") and to_cent(D("-0.005")) == D("-0.01")
