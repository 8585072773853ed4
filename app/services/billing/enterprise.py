"""Enterprise terms, set by an admin (the spec: "Enterprise is custom and required above the
overage ceiling. Only enterprise agreements allow local caching or storage of data, for the term,
with certified deletion at the end").

An enterprise account has no spend ceiling and is not refused on its balance (its calls are still
posted to the ledger, which may go below zero: the agreement invoices them). Its keys may carry
custom limits, per minute and per second, in place of their plan's. Whether the agreement allows
the developer to cache or store data, and until when, is recorded on the account and shown on each
of its keys; ending the terms clears the keys' custom limits at once."""

from __future__ import annotations

from datetime import date

from app.models import ApiKey, User
from app.services.audit import record
from app.services.billing import standing
from app.services.billing.ledger import BillingError
from app.store import store
from app.store.billing import Account

MAX_PER_SECOND = 10_000
MAX_PER_MINUTE = 600_000


def set_terms(
    account: Account,
    enterprise: bool,
    storage_allowed: bool,
    terms_until: date | None,
    note: str,
    actor: User | None = None,
) -> Account:
    """Mark the account enterprise (or not), with the data-use permission and the term."""
    note = (note or "").strip()
    if len(note) > 500:
        raise BillingError("the note is at most 500 characters")
    if storage_allowed and not enterprise:
        raise BillingError("only an enterprise agreement allows caching or storing data")
    if storage_allowed and terms_until is None:
        raise BillingError("storing data is allowed for the term: give the date the term ends")
    changed = store().billing.change(
        account.id,
        {
            "enterprise": enterprise,
            "storage_allowed": storage_allowed,
            "terms_until": terms_until if enterprise else None,
            "terms_note": (note or None) if enterprise else None,
        },
    )
    if not enterprise:
        store().billing.clear_key_limits(account.owner_id)
    standing.forget(account.owner_id)
    record(
        "billing.enterprise",
        actor=actor,
        account_id=account.id,
        owner_id=account.owner_id,
        enterprise=enterprise,
        storage_allowed=storage_allowed,
        terms_until=terms_until.isoformat() if terms_until else None,
    )
    return changed


def set_key_limits(key: ApiKey, per_minute: int | None, per_second: int | None, actor: User | None = None) -> None:
    """Custom limits for one key of an enterprise account (None: the plan's)."""
    account = store().billing.account_of(key.owner_id)
    if account is None or not account.enterprise:
        raise BillingError("custom limits are part of enterprise terms: mark the account enterprise first")
    if key.is_workspace:
        raise BillingError("workspace keys keep their own limits")
    if per_second is not None and not 1 <= per_second <= MAX_PER_SECOND:
        raise BillingError(f"per second: 1 to {MAX_PER_SECOND}")
    if per_minute is not None and not 1 <= per_minute <= MAX_PER_MINUTE:
        raise BillingError(f"per minute: 1 to {MAX_PER_MINUTE}")
    store().billing.set_key_limits(key.id, per_minute, per_second)
    record(
        "billing.enterprise",
        actor=actor,
        account_id=account.id,
        key_id=key.id,
        per_minute=per_minute,
        per_second=per_second,
    )


def terms_of(owner_id: str) -> Account | None:
    """The account whose terms a key's page shows (None: no account yet)."""
    return store().billing.account_of(owner_id)
