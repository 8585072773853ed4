"""A key owner's billing standing, as the gateway asks it on every request: may this key's calls
go on being served, and why not.

Two reasons to refuse (402, app/web/api/gateway.py):
- **the prepaid balance is used up**: the balance less what the month's calls not yet posted will
  cost (priced from the meter as the posting job will price them) is zero or less;
- **the spend ceiling is reached**: the spec's "10 times", measured here against the account's
  *reference amount*: on Build or Scale the plan's monthly fee (ceilings 5,000 and 30,000); on pay
  as you go the largest single load of credits so far, and never less than the minimum load of 10
  (so at least 100). What the ceiling holds is the month's calls at list price (what they cost
  before any plan money counts). A mail warns the owner once a month at 80 % of it.
Enterprise accounts have neither: their terms are invoiced and have no ceiling.

**Bounded staleness.** The standing is computed once per owner and kept in this process for
`BILLING_STANDING_SECONDS` (default 30 s), so the request path reads no billing row but once per
owner per interval. A change made in this process (a load, a plan, an adjustment) drops the kept
standing at once (`forget`); another process sees it within the interval. So a key may be served
for at most that long after its balance ran out (at most 30 s of its rate limit, e.g. 150 calls on
pay as you go), and those calls are billed like any other."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, date
from decimal import Decimal

from flask import current_app

from app.models import User
from app.services.billing.pricing import PRICED_PLANS, MonthSoFar, list_price, price
from app.services.mail import Mail
from app.services.metering import PLAN_FEES, month_bounds, utc_day
from app.store import store

CEILING_TIMES = 10
MIN_LOAD = Decimal("10")
WARN_AT = Decimal("0.8")
_kept: dict[str, tuple[float, Standing]] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Standing:
    """What the gateway needs to know of an owner's account, and what the billing page shows."""

    balance: Decimal  # the ledger's sum
    unposted: Decimal  # what the month's calls not yet posted will draw
    month_calls: int
    month_spend: Decimal  # the month's calls at list price
    ceiling: Decimal | None  # None: enterprise terms
    enterprise: bool
    warned_month: str | None

    @property
    def available(self) -> Decimal:
        return self.balance - self.unposted

    @property
    def exhausted(self) -> bool:
        return not self.enterprise and self.available <= 0

    @property
    def over_ceiling(self) -> bool:
        return self.ceiling is not None and self.month_spend >= self.ceiling

    @property
    def near_ceiling(self) -> bool:
        return self.ceiling is not None and self.month_spend >= self.ceiling * WARN_AT

    @property
    def ceiling_share(self) -> int:
        """How much of the ceiling the month has used, in whole per cent."""
        if not self.ceiling:
            return 0
        return int(self.month_spend * 100 / self.ceiling)


def reference_amount(plan: str, largest_load: Decimal) -> Decimal:
    """What the spend ceiling is ten times of (module docstring)."""
    if plan in PLAN_FEES:
        return PLAN_FEES[plan][0]
    return max(largest_load, MIN_LOAD)


def compute(owner_id: str, today: date | None = None) -> Standing:
    """The owner's standing now, read from the ledger and the meter."""
    billing = store().billing
    account = billing.account_of(owner_id)
    first_day, following = month_bounds(today or utc_day())
    opened = account.created_at.astimezone(UTC).date() if account is not None else first_day
    calls = billing.calls(owner_id, max(first_day, opened), following)  # billed from the opening day on
    if account is None:  # never opened: no credits
        month_calls = sum(count for _, _, count in calls)
        spend = list_price(month_calls, False)
        return Standing(Decimal("0.00"), spend, month_calls, spend, CEILING_TIMES * MIN_LOAD, False, None)
    on_plan = account.plan in PRICED_PLANS
    posted = billing.usage_of_month(account.id, first_day, following)
    done = {(entry.key_id, entry.day) for entry in posted}
    state = MonthSoFar.of((e.band or 0, e.calls or 0, e.rate or Decimal(0), -e.amount) for e in posted)
    waiting = [row for row in calls if (row[0], row[1]) not in done]
    unposted = sum(
        (line.amount for line in price(waiting, state, on_plan, billing.plan_money(account.id, first_day, following))),
        Decimal("0.00"),
    )
    month_calls = sum(count for _, _, count in calls)
    ceiling = (
        None if account.enterprise else CEILING_TIMES * reference_amount(account.plan, billing.largest_load(account.id))
    )
    return Standing(
        billing.balance(account.id),
        unposted,
        month_calls,
        list_price(month_calls, on_plan),
        ceiling,
        account.enterprise,
        account.warned_month,
    )


def standing_of(owner: User | str) -> Standing:
    """The owner's standing, kept for BILLING_STANDING_SECONDS (module docstring)."""
    owner_id = owner if isinstance(owner, str) else owner.id
    now = time.monotonic()
    with _lock:
        kept = _kept.get(owner_id)
    if kept is not None and kept[0] > now:
        return kept[1]
    fresh = compute(owner_id)
    ttl = float(current_app.config.get("BILLING_STANDING_SECONDS", 30))
    if ttl > 0:
        with _lock:
            _kept[owner_id] = (now + ttl, fresh)
    return fresh


def forget(owner_id: str | None = None) -> None:
    """Drop a kept standing (one owner's, or all): the next request computes it afresh."""
    with _lock:
        if owner_id is None:
            _kept.clear()
        else:
            _kept.pop(owner_id, None)


def refusal(now: Standing, billing_url: str) -> str | None:
    """Why calls are refused, in words that say what to do - or None while they are served."""
    if now.exhausted:
        return (
            f"Payment required: the prepaid credits of this key's account are used up "
            f"(available {max(now.available, Decimal(0)):.2f} USD). Load credits at {billing_url} to continue."
        )
    if now.over_ceiling:
        return (
            f"Payment required: this key's account reached its spend ceiling for the month "
            f"({now.month_spend:.2f} of {now.ceiling:.2f} USD at list price). Calls resume on the 1st (UTC); "
            f"for more now, buy a larger plan or ask for enterprise terms at {billing_url}."
        )
    return None


def ceiling_warning(owner: User, now: Standing, billing_url: str, today: date | None = None) -> Mail | None:
    """The month's mail at 80 % of the ceiling, once (the caller commits, then sends it)."""
    month = (today or utc_day()).strftime("%Y-%m")
    if not now.near_ceiling or now.over_ceiling or now.warned_month == month:
        return None
    account = store().billing.account_of(owner.id)
    if account is None or not store().billing.claim_warning(account.id, month):
        return None
    forget(owner.id)
    return Mail.from_template(
        owner.email,
        f"Credits ID: {now.ceiling_share} % of your spend ceiling used",
        "ceiling_warning",
        owner=owner,
        standing=now,
        month=month,
        billing_url=billing_url,
    )
