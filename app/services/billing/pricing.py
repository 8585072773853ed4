"""What metered calls cost, split the way the ledger posts them: per key, per UTC day, per band.

The spec's prices (app/services/metering.py holds the constants): pay as you go (and the `start`
tier) in marginal bands over the account's calls of the month - 0.025 for the first 100,000, 0.020
up to 300,000, 0.015 beyond; on Build and Scale every call at 0.020, the month's plan money
counting toward it (only what the calls cost beyond the plan money is drawn from the balance).

One rounding rule, applied in one place: amounts are rounded to the cent half up (`to_cent`), and
they are rounded *cumulatively*: each line's amount is the rounded running total after it less the
rounded running total before it. The lines of a month therefore add up to exactly the month's
price rounded once (`banded_amount` of the month's calls), however the calls fall across keys and
days - no cent appears or vanishes between a statement's lines and its total."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from app.services.metering import BANDS, PLAN_FEES, PLAN_RATE

CENT = Decimal("0.01")
PLAN_BAND = 0  # the band number of a call priced on a plan (pay-as-you-go bands are 1, 2, 3)
PRICED_PLANS = frozenset(PLAN_FEES)  # build, scale


def to_cent(amount: Decimal) -> Decimal:
    """The one rounding rule: to the cent, half a cent up."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class UsageLine:
    """Calls of one key on one day in one band, and what they draw from the balance (positive)."""

    key_id: str
    day: date
    band: int
    calls: int
    rate: Decimal
    amount: Decimal


@dataclass
class MonthSoFar:
    """What is already posted for the account's month: where the next calls start."""

    band_calls: int = 0  # calls priced in the bands
    band_exact: Decimal = Decimal(0)  # their price before rounding
    plan_exact: Decimal = Decimal(0)  # calls priced on a plan, before rounding (0.020 each)
    plan_charged: Decimal = Decimal(0)  # what those drew from the balance (beyond the plan money)

    @classmethod
    def of(cls, posted: Iterable[tuple[int, int, Decimal, Decimal]]) -> MonthSoFar:
        """From posted usage as (band, calls, rate, amount drawn - positive)."""
        state = cls()
        for band, calls, rate, amount in posted:
            if band == PLAN_BAND:
                state.plan_exact += calls * rate
                state.plan_charged += amount
            else:
                state.band_calls += calls
                state.band_exact += calls * rate
        return state


def _band_pieces(start: int, calls: int) -> list[tuple[int, int, Decimal]]:
    """`calls` made after `start` calls of the month, split by band: (band, calls, rate)."""
    pieces: list[tuple[int, int, Decimal]] = []
    at, left = start, calls
    for number, (ceiling, rate) in enumerate(BANDS, start=1):
        if left <= 0:
            break
        if ceiling is not None and at >= ceiling:
            continue
        room = left if ceiling is None else min(left, ceiling - at)
        pieces.append((number, room, rate))
        at, left = at + room, left - room
    return pieces


def price(
    calls: Iterable[tuple[str, date, int]], state: MonthSoFar, on_plan: bool, plan_money: Decimal
) -> list[UsageLine]:
    """Price (key, day, calls) rows in order, continuing `state` (which it advances). On a plan,
    `plan_money` is what the account paid in plan fees for the month: calls are drawn from the
    balance only beyond it. Lines with no calls are left out; a line on a plan whose calls the plan
    money covers has amount 0 (the statement still shows the calls)."""
    lines: list[UsageLine] = []
    for key_id, day, count in calls:
        if count <= 0:
            continue
        if on_plan:
            state.plan_exact += count * PLAN_RATE
            due = max(Decimal(0), to_cent(state.plan_exact) - plan_money)
            amount = max(Decimal(0), due - state.plan_charged)
            state.plan_charged += amount
            lines.append(UsageLine(key_id, day, PLAN_BAND, count, PLAN_RATE, to_cent(amount)))
            continue
        for band, part, rate in _band_pieces(state.band_calls, count):
            before = to_cent(state.band_exact)
            state.band_calls += part
            state.band_exact += part * rate
            lines.append(UsageLine(key_id, day, band, part, rate, to_cent(state.band_exact) - before))
    return lines


def list_price(calls: int, on_plan: bool) -> Decimal:
    """A month of `calls` at list price (before any plan money counts): the spend the ceiling measures."""
    if on_plan:
        return to_cent(calls * PLAN_RATE)
    state = MonthSoFar()
    price([("", date.min, calls)], state, False, Decimal(0))
    return to_cent(state.band_exact)
