"""Billing accounts, their ledger, payments and provider events, in SQLAlchemy Core, as frozen
records (app/models/billing.py says what each table is for).

The ledger is append-only: `append` inserts one entry unless one with the same `idempotency`
exists (then it writes nothing and says so), and nothing here updates or deletes an entry. The
balance is the sum of the entries. `lock` takes the account's row (an UPDATE of its `version`)
before an append that depends on the balance: on PostgreSQL a row lock held to the commit, so two
concurrent debits of one account run one after the other and the second sees the first; on SQLite
the database's write lock does the same. Every method runs in the caller's transaction and never
commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import and_, bindparam, func, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.models import (
    ApiKey,
    ApiUsage,
    BillingAccount,
    BillingEntry,
    BillingPayment,
    BillingWebhookEvent,
    KeyKind,
    User,
)
from app.store.statements import run

_accounts, _entries, _payments = BillingAccount.__table__, BillingEntry.__table__, BillingPayment.__table__
_events, _usage, _users = BillingWebhookEvent.__table__, ApiUsage.__table__, User.__table__
_keys = ApiKey.__table__
ZERO = Decimal("0.00")


@dataclass(frozen=True, slots=True)
class Account:
    id: str
    owner_id: str
    plan: str
    next_plan: str | None
    enterprise: bool
    storage_allowed: bool
    terms_until: date | None
    terms_note: str | None
    card_provider: str | None
    customer_ref: str | None
    card_ref: str | None
    card_label: str | None
    warned_month: str | None
    created_at: datetime

    @property
    def has_card(self) -> bool:
        return self.card_ref is not None


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    account_id: str
    kind: str
    amount: Decimal
    posted_at: datetime
    day: date | None
    key_id: str | None
    calls: int | None
    rate: Decimal | None
    band: int | None
    memo: str
    idempotency: str
    actor_id: str | None
    payment_ref: str | None


@dataclass(frozen=True, slots=True)
class Payment:
    id: str
    account_id: str
    provider: str
    provider_ref: str | None
    amount_cents: int
    status: str
    refunded_cents: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class AccountLine:
    """An account as the admins' list shows it."""

    account: Account
    owner_email: str
    balance: Decimal


_ACCOUNT_COLUMNS = [_accounts.c[name] for name in Account.__slots__]
_ENTRY_COLUMNS = [_entries.c[name] for name in Entry.__slots__]
_PAYMENT_COLUMNS = [_payments.c[name] for name in Payment.__slots__]
# The balance, asked on every standing refresh (app/services/billing/standing.py): built once.
_BALANCE = select(func.coalesce(func.sum(_entries.c.amount), 0)).where(
    _entries.c.account_id == bindparam("account_id", type_=_entries.c.account_id.type)
)


def _account(row: Any) -> Account | None:
    return None if row is None else Account(*row)


def _entry(row: Any) -> Entry:
    values = list(row)
    values[3] = Decimal(values[3]).quantize(ZERO)  # SQLite hands back a float-free string or Decimal
    return Entry(*values)


class SqlBilling:
    """The billing aggregate in SQL that SQLite and PostgreSQL both run."""

    # -- accounts --------------------------------------------------------------------------------

    def account_of(self, owner_id: str) -> Account | None:
        return _account(run(select(*_ACCOUNT_COLUMNS).where(_accounts.c.owner_id == owner_id)).first())

    def account(self, account_id: str) -> Account | None:
        return _account(run(select(*_ACCOUNT_COLUMNS).where(_accounts.c.id == account_id)).first())

    def _insert_account(self, values: dict[str, Any]) -> None:
        run(sqlite_insert(_accounts).values(**values).on_conflict_do_nothing(index_elements=["owner_id"]))

    def open_account(self, owner_id: str, account_id: str, at: datetime) -> Account:
        """The owner's account, made now if they had none (two first requests make one)."""
        found = self.account_of(owner_id)
        if found is not None:
            return found
        self._insert_account(
            {
                "id": account_id,
                "owner_id": owner_id,
                "plan": "payg",
                "enterprise": False,
                "storage_allowed": False,
                "version": 0,
                "created_at": at,
            }
        )
        made = self.account_of(owner_id)
        assert made is not None
        return made

    def change(self, account_id: str, values: dict[str, Any]) -> Account:
        run(update(_accounts).where(_accounts.c.id == account_id).values(**values))
        changed = self.account(account_id)
        assert changed is not None
        return changed

    def lock(self, account_id: str) -> None:
        """Hold the account's row until the commit (module docstring)."""
        run(update(_accounts).where(_accounts.c.id == account_id).values(version=_accounts.c.version + 1))

    def with_owners(self) -> list[AccountLine]:
        balances = (
            select(_entries.c.account_id, func.sum(_entries.c.amount).label("balance"))
            .group_by(_entries.c.account_id)
            .subquery()
        )
        rows = run(
            select(*_ACCOUNT_COLUMNS, _users.c.email, balances.c.balance)
            .join(_users, _users.c.id == _accounts.c.owner_id)
            .outerjoin(balances, balances.c.account_id == _accounts.c.id)
            .order_by(_users.c.email)
        ).all()
        width = len(_ACCOUNT_COLUMNS)
        return [
            AccountLine(Account(*row[:width]), row[width], Decimal(row[width + 1] or 0).quantize(ZERO)) for row in rows
        ]

    # -- the ledger -------------------------------------------------------------------------------

    def _insert_entry(self, values: dict[str, Any]) -> bool:
        statement = sqlite_insert(_entries).values(**values).on_conflict_do_nothing(index_elements=["idempotency"])
        return run(statement.returning(_entries.c.id)).first() is not None  # no row back: it was there

    def append(self, values: dict[str, Any]) -> bool:
        """Add one entry; False (and nothing written) when its `idempotency` was already posted."""
        return self._insert_entry(values)

    def balance(self, account_id: str) -> Decimal:
        total = run(_BALANCE, {"account_id": account_id}).scalar()
        return Decimal(total or 0).quantize(ZERO)

    def balance_before(self, account_id: str, moment: datetime) -> Decimal:
        total = run(
            select(func.coalesce(func.sum(_entries.c.amount), 0)).where(
                _entries.c.account_id == account_id, _entries.c.posted_at < moment
            )
        ).scalar()
        return Decimal(total or 0).quantize(ZERO)

    def entries(self, account_id: str, start: datetime | None = None, end: datetime | None = None) -> list[Entry]:
        """The account's entries posted in [start, end), oldest first."""
        conditions = [_entries.c.account_id == account_id]
        if start is not None:
            conditions.append(_entries.c.posted_at >= start)
        if end is not None:
            conditions.append(_entries.c.posted_at < end)
        rows = run(select(*_ENTRY_COLUMNS).where(and_(*conditions)).order_by(_entries.c.id)).all()
        return [_entry(row) for row in rows]

    def usage_of_month(self, account_id: str, first_day: date, following: date) -> list[Entry]:
        """The usage entries for calls made in [first_day, following), in posting order."""
        rows = run(
            select(*_ENTRY_COLUMNS)
            .where(
                _entries.c.account_id == account_id,
                _entries.c.kind == "usage",
                _entries.c.day >= first_day,
                _entries.c.day < following,
            )
            .order_by(_entries.c.id)
        ).all()
        return [_entry(row) for row in rows]

    def posted(self, idempotency: str) -> bool:
        return run(select(_entries.c.id).where(_entries.c.idempotency == idempotency)).first() is not None

    def plan_money(self, account_id: str, first_day: date, following: date) -> Decimal:
        """What the account paid in plan fees for the month starting `first_day` (a positive sum)."""
        total = run(
            select(func.coalesce(func.sum(_entries.c.amount), 0)).where(
                _entries.c.account_id == account_id,
                _entries.c.kind == "plan_fee",
                _entries.c.day >= first_day,
                _entries.c.day < following,
            )
        ).scalar()
        return -Decimal(total or 0).quantize(ZERO)

    # -- the meter, as billing reads it ------------------------------------------------------------

    def calls(self, owner_id: str, first_day: date, following: date) -> list[tuple[str, date, int]]:
        """(key, day, calls) of the owner's billed keys (all but workspace keys, which are a member's
        and not billed) for the metered days in [first_day, following), by day then key."""
        rows = run(
            select(_usage.c.key_id, _usage.c.day, func.sum(_usage.c.count))
            .join(_keys, _keys.c.id == _usage.c.key_id)
            .where(
                _keys.c.owner_id == owner_id,
                _keys.c.kind != KeyKind.WORKSPACE.value,
                _usage.c.day >= first_day,
                _usage.c.day < following,
            )
            .group_by(_usage.c.day, _usage.c.key_id)
            .order_by(_usage.c.day, _usage.c.key_id)
        ).all()
        return [(key_id, day, int(count)) for key_id, day, count in rows]

    def billed_owners(self, first_day: date, following: date) -> list[str]:
        """Owners whose billed keys made calls in [first_day, following): whom the posting job visits."""
        rows = run(
            select(_keys.c.owner_id)
            .join(_usage, _usage.c.key_id == _keys.c.id)
            .where(_keys.c.kind != KeyKind.WORKSPACE.value, _usage.c.day >= first_day, _usage.c.day < following)
            .group_by(_keys.c.owner_id)
            .order_by(_keys.c.owner_id)
        ).all()
        return [row[0] for row in rows]

    def on_plans(self) -> list[Account]:
        """Accounts on a plan, or with a change of plan waiting for the month's end."""
        rows = run(
            select(*_ACCOUNT_COLUMNS).where((_accounts.c.plan != "payg") | _accounts.c.next_plan.is_not(None))
        ).all()
        return [Account(*row) for row in rows]

    def largest_load(self, account_id: str) -> Decimal:
        total = run(
            select(func.max(_entries.c.amount)).where(_entries.c.account_id == account_id, _entries.c.kind == "load")
        ).scalar()
        return Decimal(total or 0).quantize(ZERO)

    def claim_warning(self, account_id: str, month: str) -> bool:
        """Mark the month's 80 % warning as sent; False when it already was (one mail a month)."""
        statement = (
            update(_accounts)
            .where(
                _accounts.c.id == account_id,
                (_accounts.c.warned_month.is_(None)) | (_accounts.c.warned_month != month),
            )
            .values(warned_month=month)
        )
        return bool(run(statement).rowcount)

    def set_key_limits(self, key_id: str, per_minute: int | None, per_second: int | None) -> None:
        run(
            update(_keys).where(_keys.c.id == key_id).values(custom_per_minute=per_minute, custom_per_second=per_second)
        )

    def clear_key_limits(self, owner_id: str) -> int:
        statement = (
            update(_keys).where(_keys.c.owner_id == owner_id).values(custom_per_minute=None, custom_per_second=None)
        )
        return int(run(statement).rowcount)

    def set_key_plans(self, owner_id: str, plan: str) -> int:
        """Every live console key of the owner on `plan` (its limits follow at the next request)."""
        statement = (
            update(_keys)
            .where(_keys.c.owner_id == owner_id, _keys.c.kind != KeyKind.WORKSPACE.value, _keys.c.revoked_at.is_(None))
            .values(plan=plan)
        )
        return int(run(statement).rowcount)

    # -- payments ----------------------------------------------------------------------------------

    def insert_payment(self, values: dict[str, Any]) -> Payment:
        run(_payments.insert().values(**values))
        found = self.payment(values["id"])
        assert found is not None
        return found

    def payment(self, payment_id: str) -> Payment | None:
        row = run(select(*_PAYMENT_COLUMNS).where(_payments.c.id == payment_id)).first()
        return None if row is None else Payment(*row)

    def payment_by_ref(self, provider_ref: str) -> Payment | None:
        row = run(select(*_PAYMENT_COLUMNS).where(_payments.c.provider_ref == provider_ref)).first()
        return None if row is None else Payment(*row)

    def payments_of(self, account_id: str, limit: int = 20) -> list[Payment]:
        rows = run(
            select(*_PAYMENT_COLUMNS)
            .where(_payments.c.account_id == account_id)
            .order_by(_payments.c.created_at.desc())
            .limit(limit)
        ).all()
        return [Payment(*row) for row in rows]

    def change_payment(self, payment_id: str, values: dict[str, Any]) -> Payment:
        run(update(_payments).where(_payments.c.id == payment_id).values(**values))
        found = self.payment(payment_id)
        assert found is not None
        return found

    # -- provider events -----------------------------------------------------------------------------

    def _insert_event(self, values: dict[str, Any]) -> bool:
        statement = sqlite_insert(_events).values(**values).on_conflict_do_nothing(index_elements=["event_id"])
        return run(statement.returning(_events.c.event_id)).first() is not None

    def note_event(self, event_id: str, provider: str, kind: str, at: datetime) -> bool:
        """Remember a provider event; False when it was already applied (a replayed delivery)."""
        return self._insert_event({"event_id": event_id, "provider": provider, "type": kind, "received_at": at})
