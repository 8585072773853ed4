"""The daily posting job (`flask billing post`): each finished UTC day's metered calls, priced and
drawn from each account's balance, then the month's plan renewals.

Idempotent: a (key, day) already posted is never posted again - the job skips it, and should two
runs overlap, the ledger's unique idempotency key (`usage:<key>:<day>:<band>`) lets one of them
write it. Run it twice, it posts once; skip a day, the next run posts both. Only days before
`through` (by default today, UTC) are posted: today's calls are still coming in (the gateway
counts them as *unposted* in the meantime, app/services/billing/standing.py).

An account is billed for the calls made from the day it was opened (UTC) on: the calls a key made
before its owner had an account (before billing was deployed, say) are never posted, and an owner
without an account is skipped (the gateway refuses their keys: they have no credits).

A day is priced on the plan the account holds when the day is posted, in the order days and keys
come (app/services/billing/pricing.py: the running total of the month continues from what is
already posted, so the month adds up to its price rounded once)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, timedelta
from decimal import Decimal

from app.services.audit import record
from app.services.billing.ledger import post
from app.services.billing.pricing import PRICED_PLANS, MonthSoFar, price
from app.services.metering import month_bounds, utc_day
from app.store import store


@dataclass
class PostingRun:
    through: date
    accounts: int = 0
    lines: int = 0
    amount: Decimal = Decimal("0.00")
    renewals: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "through": self.through.isoformat(),
            "accounts": self.accounts,
            "lines": self.lines,
            "amount": str(self.amount),
            "renewals": self.renewals,
        }


def _months(since: date, through: date) -> list[tuple[date, date]]:
    """The calendar months from `since`'s to the one holding the day before `through`."""
    out, first_day = [], since.replace(day=1)
    last = through - timedelta(days=1)
    while first_day <= last:
        start, following = month_bounds(first_day)
        out.append((start, following))
        first_day = following
    return out


def post_owner(owner_id: str, first_day: date, following: date, through: date) -> tuple[int, Decimal]:
    """Post one owner's unposted days of one month (before `through`): lines written, amount drawn."""
    billing = store().billing
    account = billing.account_of(owner_id)
    if account is None:
        return 0, Decimal("0.00")
    opened = account.created_at.astimezone(UTC).date()
    calls = billing.calls(owner_id, max(first_day, opened), min(following, through))
    if not calls:
        return 0, Decimal("0.00")
    billing.lock(account.id)  # one posting of an account at a time; reads below see the others'
    posted = billing.usage_of_month(account.id, first_day, following)
    done = {(entry.key_id, entry.day) for entry in posted}
    waiting = [row for row in calls if (row[0], row[1]) not in done]
    if not waiting:
        return 0, Decimal("0.00")
    state = MonthSoFar.of((e.band or 0, e.calls or 0, e.rate or Decimal(0), -e.amount) for e in posted)
    on_plan = account.plan in PRICED_PLANS
    lines = price(waiting, state, on_plan, billing.plan_money(account.id, first_day, following))
    written, drawn = 0, Decimal("0.00")
    for line in lines:
        result = post(
            account,
            "usage",
            -line.amount,
            f"usage:{line.key_id}:{line.day.isoformat()}:{line.band}",
            memo=f"{line.calls} calls at {line.rate}",
            audit=False,
            day=line.day,
            key_id=line.key_id,
            calls=line.calls,
            rate=line.rate,
            band=line.band,
        )
        if result.new:
            written, drawn = written + 1, drawn + line.amount
    if written:
        record(
            "billing.usage_posted",
            account_id=account.id,
            owner_id=owner_id,
            month=first_day.strftime("%Y-%m"),
            lines=written,
            amount=str(drawn),
        )
    return written, drawn


def post_usage(through: date | None = None, since: date | None = None) -> PostingRun:
    """Post every account's unposted days before `through` (today), from `since` (the first day of
    the previous month: a job that missed a month-end still posts it)."""
    through = through or utc_day()
    since = since or (through.replace(day=1) - timedelta(days=1)).replace(day=1)
    run = PostingRun(through)
    visited: set[str] = set()
    for first_day, following in _months(since, through):
        for owner_id in store().billing.billed_owners(first_day, min(following, through)):
            lines, amount = post_owner(owner_id, first_day, following, through)
            if lines:
                visited.add(owner_id)
                run.lines += lines
                run.amount += amount
    run.accounts = len(visited)
    return run


def run_daily(through: date | None = None) -> PostingRun:
    """The job: post the finished days, then renew (or end) the plans of the month `through` is in."""
    from app.services.billing.plans import renew_plans

    posting = post_usage(through)
    posting.renewals = renew_plans(posting.through)
    return posting
