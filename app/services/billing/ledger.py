"""A developer's billing account and its ledger: the one way money is written.

Every change of a balance is one `post`: an entry appended to the account's ledger (never updated,
never deleted), rounded once to the cent half up, named by an idempotency key so that whatever
posts twice posts once, and recorded on the audit trail (usage, posted by the daily job in bulk,
is audited once per account and run instead). A debit that must not take the balance below zero
(a plan bought from credits) takes the account's row lock first (`store().billing.lock`), so two
concurrent debits of one account are serialized and the second sees the first.

Functions here only flush; the page or command that calls them commits once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from app.models import User
from app.models.base import new_uuid, utcnow
from app.services.audit import record
from app.services.billing import standing
from app.services.billing.pricing import to_cent
from app.store import store
from app.store.billing import Account, Entry

CURRENCY = "USD"
KINDS = {
    "load": "Credits loaded",
    "starter": "Starter credit",
    "usage": "Calls",
    "plan_fee": "Plan fee",
    "refund": "Refund",
    "adjustment": "Adjustment",
}
MAX_ADJUSTMENT = Decimal("100000")
MAX_AMOUNT = Decimal("1000000000")  # no amount a person types is this large


class BillingError(ValueError):
    """A billing request that cannot be honoured, with a message that says what to do."""


def account_for(owner: User | str) -> Account:
    """The owner's account, opened on first use (a developer has one from their first visit)."""
    owner_id = owner if isinstance(owner, str) else owner.id
    return store().billing.open_account(owner_id, new_uuid(), utcnow())


def find_account(account_id: str) -> Account:
    found = store().billing.account((account_id or "")[:36])
    if found is None:
        raise BillingError(f"no billing account with id {account_id}")
    return found


def parse_amount(text: str | Decimal | int, *, positive: bool = True) -> Decimal:
    """An amount typed by a person: dollars, at most two decimals."""
    raw = str(text).strip().replace(",", "").lstrip("$")
    try:
        amount = Decimal(raw) if len(raw) <= 20 else Decimal("NaN")
    except InvalidOperation:
        raise BillingError(f"not an amount: {str(text)[:40]!r}") from None
    if not amount.is_finite():
        raise BillingError(f"not an amount: {str(text)[:40]!r}")
    if abs(amount) >= MAX_AMOUNT:
        raise BillingError(f"amounts are below {MAX_AMOUNT:,} USD")
    if amount != amount.quantize(Decimal("0.01")):
        raise BillingError("amounts are in dollars to the cent (at most two decimals)")
    if positive and amount <= 0:
        raise BillingError("the amount must be more than zero")
    return amount


@dataclass(frozen=True)
class Posted:
    """What `post` did: the entry's amount, and whether it was new (False: already posted)."""

    amount: Decimal
    new: bool


def post(
    account: Account,
    kind: str,
    amount: Decimal,
    idempotency: str,
    *,
    memo: str = "",
    actor: User | None = None,
    at: datetime | None = None,
    audit: bool = True,
    **fields: Any,
) -> Posted:
    """Append one entry (credit > 0, debit < 0) unless `idempotency` was already posted."""
    if kind not in KINDS:
        raise ValueError(f"unknown ledger entry kind {kind!r}")
    amount = to_cent(amount)
    new = store().billing.append(
        {
            "account_id": account.id,
            "kind": kind,
            "amount": amount,
            "posted_at": at or utcnow(),
            "memo": memo[:255],
            "idempotency": idempotency[:160],
            "actor_id": actor.id if actor else None,
            **fields,
        }
    )
    if new and audit:
        record(
            "billing.posted",
            actor=actor,
            account_id=account.id,
            owner_id=account.owner_id,
            kind=kind,
            amount=str(amount),
            memo=memo[:255] or None,
        )
    standing.forget(account.owner_id)
    return Posted(amount, new)


def balance(account: Account) -> Decimal:
    return store().billing.balance(account.id)


def entries(account: Account, start: datetime | None = None, end: datetime | None = None) -> list[Entry]:
    return store().billing.entries(account.id, start, end)


def adjust(account: Account, amount: Decimal, memo: str, actor: User | None = None) -> Posted:
    """An operator's correction (positive: a credit; negative: a debit), with the reason."""
    if amount == 0 or abs(amount) > MAX_ADJUSTMENT:
        raise BillingError(f"an adjustment is non-zero and at most {MAX_ADJUSTMENT} either way")
    if not memo.strip():
        raise BillingError("say why: an adjustment needs a reason")
    store().billing.lock(account.id)
    return post(account, "adjustment", amount, f"adjust:{new_uuid()}", memo=memo.strip(), actor=actor)


def debit_from_balance(
    account: Account,
    kind: str,
    amount: Decimal,
    idempotency: str,
    memo: str,
    actor: User | None = None,
    **fields: Any,
) -> Posted:
    """A debit the balance must cover (a plan fee): under the account's row lock, refused when the
    balance is short, so two concurrent debits never take it below zero."""
    store().billing.lock(account.id)
    if store().billing.posted(idempotency):
        return Posted(-to_cent(amount), False)
    available = balance(account)
    if available < amount:
        raise BillingError(
            f"this needs {to_cent(amount)} {CURRENCY} and the balance is {available} {CURRENCY}: load credits first"
        )
    return post(account, kind, -amount, idempotency, memo=memo, actor=actor, **fields)
