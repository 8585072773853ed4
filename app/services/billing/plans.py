"""Build and Scale: bought, upgraded and cancelled from the billing page, paid from the prepaid
balance (a card is charged only when credits are loaded).

- **Buying or upgrading** takes effect at once: the keys' limits follow from their next request
  (every live console key of the account is put on the plan), and the fee is pro-rated by the
  days left in the UTC month, today included: Build bought on the 21st of a 30-day month costs
  500 x 10/30 = 166.67. An upgrade from Build to Scale costs the difference, pro-rated the same
  way. The plan money paid for the month counts toward the month's calls (app/services/billing/
  pricing.py), so the calls included follow the money: 166.67 covers 8,333 calls at 0.020.
- **Cancelling or downgrading** takes effect when the month ends: the month is paid for, and the
  keys keep the plan's limits until then. Nothing is refunded.
- **Renewal** (the daily job, on the first day of a month): the plan's full fee for the new month
  is drawn from the balance; when the balance cannot cover it, the account goes back to pay as you
  go (and its keys to 300 a minute) and the owner sees why on the billing page.

Every change is one ledger entry and one audit event."""

from __future__ import annotations

import calendar
from datetime import date
from decimal import Decimal

from app.models import KeyPlan, User
from app.services.audit import record
from app.services.billing import standing
from app.services.billing.ledger import CURRENCY, BillingError, debit_from_balance
from app.services.billing.pricing import PRICED_PLANS, to_cent
from app.services.metering import PLAN_FEES, utc_day
from app.store import store
from app.store.billing import Account

PAYG = KeyPlan.PAYG.value
RANK = {PAYG: 0, KeyPlan.BUILD.value: 1, KeyPlan.SCALE.value: 2}
NAMES = {PAYG: "Pay as you go", KeyPlan.BUILD.value: "Build", KeyPlan.SCALE.value: "Scale"}


def fee(plan: str) -> Decimal:
    return PLAN_FEES[plan][0] if plan in PLAN_FEES else Decimal(0)


def prorated(amount: Decimal, today: date) -> Decimal:
    """`amount` for the days left in `today`'s month, today included."""
    days = calendar.monthrange(today.year, today.month)[1]
    return to_cent(amount * (days - today.day + 1) / days)


def upgrade_price(account: Account, plan: str, today: date) -> Decimal:
    return prorated(fee(plan) - fee(account.plan), today)


def _switch(account: Account, plan: str, next_plan: str | None = None) -> Account:
    changed = store().billing.change(account.id, {"plan": plan, "next_plan": next_plan})
    store().billing.set_key_plans(account.owner_id, plan)
    standing.forget(account.owner_id)
    return changed


def key_plan(account: Account, asked: str) -> str:
    """The plan a new console key gets: the account's Build or Scale when it holds one (a key's
    limits follow the plan paid for); otherwise the key's own choice of pay as you go or the
    `start` tier - Build and Scale are bought on the billing page, not per key."""
    if account.plan in PRICED_PLANS:
        return account.plan
    if asked in PRICED_PLANS:
        raise BillingError(
            f"the {NAMES[asked]} plan is bought on the billing page (Console, Billing); your keys then follow it"
        )
    return asked


def change_plan(account: Account, plan: str, actor: User | None = None, today: date | None = None) -> Account:
    """Buy, upgrade, downgrade or cancel (module docstring)."""
    today = today or utc_day()
    if plan not in RANK:
        raise BillingError(f"plan must be one of {', '.join(RANK)}")
    if account.enterprise:
        raise BillingError("an enterprise account's terms are set by an administrator")
    if plan == account.plan:
        if account.next_plan is None:
            raise BillingError(f"the account is already on {NAMES[plan]}")
        changed = store().billing.change(account.id, {"next_plan": None})  # a scheduled change undone
        record("billing.plan_changed", actor=actor, account_id=account.id, plan=plan, next_plan=None)
        return changed
    if RANK[plan] < RANK[account.plan]:
        changed = store().billing.change(account.id, {"next_plan": plan})
        record("billing.plan_changed", actor=actor, account_id=account.id, plan=account.plan, next_plan=plan)
        return changed
    month = today.replace(day=1)
    price = upgrade_price(account, plan, today)
    debit_from_balance(
        account,
        "plan_fee",
        price,
        f"plan:{account.id}:{month:%Y-%m}:{account.plan}->{plan}",
        f"{NAMES[plan]} plan, {today:%Y-%m-%d} to the month's end (pro-rated)",
        actor,
        day=month,
    )
    changed = _switch(account, plan)
    record("billing.plan_changed", actor=actor, account_id=account.id, plan=plan, paid=str(price), currency=CURRENCY)
    return changed


def renew_plans(today: date | None = None) -> list[str]:
    """Apply the changes waiting for the month's end, and draw each plan's fee for the month of
    `today` (once: the fee's idempotency key names the month). What happened, one line each."""
    today = today or utc_day()
    month = today.replace(day=1)
    following = date(month.year + (month.month == 12), month.month % 12 + 1, 1)
    billing, done = store().billing, []
    for on_plan in billing.on_plans():
        account = on_plan
        renewal = f"plan:{account.id}:{month:%Y-%m}:renewal"
        if billing.posted(renewal) or billing.plan_money(account.id, month, following) > 0:
            continue  # the month is paid already (renewed, or the plan was bought in it)
        if account.next_plan is not None:
            account = _switch(account, account.next_plan)
            record("billing.plan_changed", account_id=account.id, plan=account.plan, reason="scheduled change")
            done.append(f"{account.owner_id}: now on {NAMES[account.plan]}")
        if account.plan not in PRICED_PLANS:
            continue
        name = NAMES[account.plan]
        try:
            paid = debit_from_balance(
                account, "plan_fee", fee(account.plan), renewal, f"{name} plan, {month:%B %Y}", day=month
            )
        except BillingError:
            _switch(account, PAYG)
            record("billing.plan_changed", account_id=account.id, plan=PAYG, reason="balance too low to renew")
            done.append(f"{account.owner_id}: {name} not renewed (balance too low), now pay as you go")
            continue
        if paid.new:
            done.append(f"{account.owner_id}: {name} renewed for {month:%Y-%m}")
    return done
