"""Billing: a developer's prepaid account, its ledger, the payments that load it, and the payment
provider's webhook events already applied.

The balance is never a column: it is the sum of the account's ledger entries, which are only ever
appended (a mistake is corrected by a new entry: an adjustment or a refund). Every amount is a
`Numeric(14, 2)`: dollars to the cent, credits positive, debits negative. `idempotency` names what
an entry is for (`usage:<key>:<day>:<band>`, `load:<payment>`, `plan:<account>:<month>:…`), unique,
so whatever posts twice (a job run twice, a webhook delivered twice) posts once.

An account's row is also its lock: whatever appends to its ledger first updates the row
(`version`), which serializes the appends of one account on PostgreSQL (a row lock) and on SQLite
(the database's write lock), so a balance read after the lock is the balance the append changes."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import Boolean, Date, ForeignKey, Integer, Numeric, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.extensions import Model
from app.models.base import UTCDateTime, new_uuid, utcnow

MONEY = Numeric(14, 2)


class BillingAccount(Model):
    __tablename__ = "billing_accounts"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    # payg (pay as you go: the bands), build or scale (app/services/billing/plans.py)
    plan: Mapped[str] = mapped_column(String(16), default="payg")
    # A cancellation or a downgrade takes effect when the month ends: the plan from then on.
    next_plan: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # Enterprise terms (set by an admin): custom per-key limits, no spend ceiling, and - only
    # under them - the spec's permission to cache or store data for the term.
    enterprise: Mapped[bool] = mapped_column(Boolean, default=False)
    storage_allowed: Mapped[bool] = mapped_column(Boolean, default=False)
    terms_until: Mapped[date | None] = mapped_column(Date, nullable=True)
    terms_note: Mapped[str | None] = mapped_column(String(500), nullable=True)
    # The saved card, as the payment provider names it (never a card number).
    card_provider: Mapped[str | None] = mapped_column(String(16), nullable=True)
    customer_ref: Mapped[str | None] = mapped_column(String(255), nullable=True)
    card_ref: Mapped[str | None] = mapped_column(String(255), nullable=True)
    card_label: Mapped[str | None] = mapped_column(String(120), nullable=True)
    # The month (YYYY-MM) the owner was last warned at 80 % of the spend ceiling.
    warned_month: Mapped[str | None] = mapped_column(String(7), nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=0)  # bumped to lock the row (module docstring)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class BillingEntry(Model):
    """One line of an account's ledger: never updated, never deleted."""

    __tablename__ = "billing_entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("billing_accounts.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # load, starter, usage, plan_fee, refund, adjustment
    amount: Mapped[Decimal] = mapped_column(MONEY)
    posted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    # usage: the UTC day of the calls; plan_fee: the first day of the month it pays for
    day: Mapped[date | None] = mapped_column(Date, nullable=True)
    key_id: Mapped[str | None] = mapped_column(String(36), nullable=True)  # no FK: the ledger outlives keys
    calls: Mapped[int | None] = mapped_column(Integer, nullable=True)
    rate: Mapped[Decimal | None] = mapped_column(Numeric(8, 3), nullable=True)
    band: Mapped[int | None] = mapped_column(Integer, nullable=True)  # 1, 2, 3 (pay as you go); 0 on a plan
    memo: Mapped[str] = mapped_column(String(255), default="")
    idempotency: Mapped[str] = mapped_column(String(160), unique=True)
    actor_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    payment_ref: Mapped[str | None] = mapped_column(String(255), nullable=True)


class BillingPayment(Model):
    """A charge asked of the payment provider for a load of credits, and where it stands."""

    __tablename__ = "billing_payments"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[str] = mapped_column(ForeignKey("billing_accounts.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(16))
    provider_ref: Mapped[str | None] = mapped_column(String(255), nullable=True, unique=True)
    amount_cents: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending, succeeded, failed, refunded
    refunded_cents: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class BillingWebhookEvent(Model):
    """A provider event already applied: a replayed delivery is acknowledged and does nothing."""

    __tablename__ = "billing_webhook_events"

    event_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    provider: Mapped[str] = mapped_column(String(16))
    type: Mapped[str] = mapped_column(String(80))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
