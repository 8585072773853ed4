"""Loading credits: a card saved once (with the starter credit), a charge per load, refunds, and
the payment provider's webhooks - each applied once, in whatever order they come.

A load is two units of work around the provider's call: the payment is written `pending` and
committed first (so a webhook that beats our own answer finds it, by the id the provider carries in
its metadata), then the card is charged, then the outcome is applied. The credit is posted under the
idempotency key `load:<payment id>`, whichever of the answer and the webhook says "succeeded"
first; a failure reported after a success changes nothing (a payment that succeeded stays so).

Loads: at least 10, presets 10, 25, 100 and 500, at most 10,000 at once; no base fee. The starter
credit of 5 is granted once per account, the first time a card is saved."""

from __future__ import annotations

from decimal import Decimal

from app.models import User
from app.models.base import new_uuid, utcnow
from app.services.audit import record
from app.services.billing.ledger import CURRENCY, BillingError, Posted, account_for, balance, post
from app.services.payments import Charge, PaymentError, ProviderEvent, SavedCard, payment_provider
from app.store import store
from app.store.billing import Account, Payment

PRESETS = (10, 25, 100, 500)
MIN_LOAD = Decimal("10")
MAX_LOAD = Decimal("10000")
STARTER_CREDIT = Decimal("5")


def cents(amount: Decimal) -> int:
    return int((amount * 100).to_integral_value())


def start_card_setup(account: Account, owner: User, return_url: str) -> str:
    """Where to send the developer to save a card (the provider's page, or the offline one)."""
    setup = payment_provider().start_card_setup(account.id, owner.email, account.customer_ref, return_url)
    if setup.customer_ref and setup.customer_ref != account.customer_ref:
        store().billing.change(account.id, {"customer_ref": setup.customer_ref})
    return setup.redirect_url


def save_card(account: Account, card: SavedCard, actor: User | None = None) -> Posted:
    """Keep the card for later loads; the first card of an account brings the starter credit."""
    provider = payment_provider()
    store().billing.lock(account.id)
    values: dict[str, object] = {"card_provider": provider.name, "card_ref": card.card_ref, "card_label": card.label}
    if card.customer_ref:
        values["customer_ref"] = card.customer_ref
    if account.card_ref != card.card_ref:
        account = store().billing.change(account.id, values)
        record("billing.card_added", actor=actor, account_id=account.id, owner_id=account.owner_id, card=card.label)
    return post(
        account,
        "starter",
        STARTER_CREDIT,
        f"starter:{account.id}",
        memo="Starter credit for adding a card",
        actor=actor,
    )


def load_amount(text: str | Decimal | int) -> Decimal:
    from app.services.billing.ledger import parse_amount

    amount = parse_amount(text)
    if amount < MIN_LOAD:
        raise BillingError(f"loads start at {MIN_LOAD} {CURRENCY}")
    if amount > MAX_LOAD:
        raise BillingError(f"at most {MAX_LOAD} {CURRENCY} at once")
    return amount


def begin_load(account: Account, amount: Decimal) -> Payment:
    """Write the pending payment (the caller commits before charging: module docstring)."""
    if not account.has_card:
        raise BillingError("add a card first: credits are loaded from a saved card")
    now = utcnow()
    return store().billing.insert_payment(
        {
            "id": new_uuid(),
            "account_id": account.id,
            "provider": payment_provider().name,
            "amount_cents": cents(amount),
            "status": "pending",
            "refunded_cents": 0,
            "created_at": now,
            "updated_at": now,
        }
    )


def charge(payment: Payment) -> Charge:
    """Ask the provider to charge the saved card (no transaction of ours is open on it)."""
    account = store().billing.account(payment.account_id)
    assert account is not None and account.card_ref is not None
    try:
        return payment_provider().charge(
            account.id, payment.id, account.customer_ref, account.card_ref, payment.amount_cents
        )
    except PaymentError as exc:
        return Charge("", "failed", str(exc))


def settle(payment: Payment, outcome: Charge) -> Payment:
    """Apply the provider's answer to a load."""
    if outcome.status == "succeeded":
        return succeeded(payment, outcome.ref, payment.amount_cents)
    if outcome.status == "failed":
        return failed(payment, outcome.ref or None, outcome.message)
    return store().billing.change_payment(
        payment.id, {"provider_ref": outcome.ref or payment.provider_ref, "updated_at": utcnow()}
    )


def succeeded(payment: Payment, provider_ref: str | None, amount_cents: int) -> Payment:
    account = store().billing.account(payment.account_id)
    assert account is not None
    store().billing.lock(account.id)
    current = store().billing.payment(payment.id) or payment
    changed = store().billing.change_payment(
        current.id,
        {
            "status": "succeeded" if current.status != "refunded" else "refunded",
            "provider_ref": provider_ref or current.provider_ref,
            "updated_at": utcnow(),
        },
    )
    post(
        account,
        "load",
        Decimal(amount_cents) / 100,
        f"load:{payment.id}",
        memo=f"Card payment {provider_ref or payment.id}",
        payment_ref=provider_ref or payment.id,
    )
    return changed


def failed(payment: Payment, provider_ref: str | None, message: str) -> Payment:
    current = store().billing.payment(payment.id) or payment
    if current.status in ("succeeded", "refunded"):
        return current  # a late failure report: the payment succeeded (module docstring)
    changed = store().billing.change_payment(
        current.id, {"status": "failed", "provider_ref": provider_ref or current.provider_ref, "updated_at": utcnow()}
    )
    record("billing.payment_failed", account_id=payment.account_id, payment_id=payment.id, message=message[:200])
    return changed


def refund(payment: Payment, amount: Decimal, actor: User | None = None, memo: str = "") -> Posted:
    """Give back part or all of a load, to the card it came from: at most what is left of the
    payment and of the balance (spent credits are not refunded)."""
    if payment.status not in ("succeeded", "refunded") or not payment.provider_ref:
        raise BillingError("only a payment that succeeded can be refunded")
    account = store().billing.account(payment.account_id)
    assert account is not None
    store().billing.lock(account.id)
    payment = store().billing.payment(payment.id) or payment
    asked, left = cents(amount), payment.amount_cents - payment.refunded_cents
    if asked <= 0 or asked > left:
        raise BillingError(f"at most {Decimal(left) / 100:.2f} {CURRENCY} of this payment is left to refund")
    if amount > balance(account):
        raise BillingError(f"the balance is {balance(account)} {CURRENCY}: spent credits are not refunded")
    if payment.provider_ref is None:
        raise BillingError("this payment was never charged: there is nothing to refund")
    total = payment.refunded_cents + asked
    payment_provider().refund(payment.provider_ref, asked, f"refund-{payment.id}-{total}")
    return _refunded_to(account, payment, total, memo or "Refund to card", actor)


def _refunded_to(account: Account, payment: Payment, total_cents: int, memo: str, actor: User | None) -> Posted:
    """Bring the ledger to `total_cents` refunded on `payment` (an older total adds nothing)."""
    delta = total_cents - payment.refunded_cents
    if delta <= 0:
        return Posted(Decimal("0.00"), False)
    store().billing.change_payment(
        payment.id,
        {
            "refunded_cents": total_cents,
            "status": "refunded" if total_cents >= payment.amount_cents else payment.status,
            "updated_at": utcnow(),
        },
    )
    return post(
        account,
        "refund",
        -Decimal(delta) / 100,
        f"refund:{payment.provider_ref or payment.id}:{total_cents}",
        memo=memo,
        actor=actor,
        payment_ref=payment.provider_ref,
    )


class UnknownPayment(LookupError):
    """A webhook about a payment we have no record of (yet): the provider should deliver it again."""


def apply_event(event: ProviderEvent) -> str:
    """Apply one webhook event, once: 'applied', 'replayed' (already done) or 'ignored'."""
    billing = store().billing
    payment = None
    if event.kind in ("payment_succeeded", "payment_failed", "refunded"):
        payment = billing.payment(event.payment_id) if event.payment_id else None
        payment = payment or (billing.payment_by_ref(event.payment_ref) if event.payment_ref else None)
        if payment is None:
            raise UnknownPayment(event.payment_ref or event.id)
    if not billing.note_event(event.id, payment_provider().name, event.type, utcnow()):
        return "replayed"
    if event.kind == "card_saved" and event.card and event.account_id:
        account = billing.account(event.account_id)
        if account is None:
            return "ignored"
        save_card(account, event.card)
    elif event.kind == "payment_succeeded" and payment is not None:
        succeeded(payment, event.payment_ref, event.amount_cents or payment.amount_cents)
    elif event.kind == "payment_failed" and payment is not None:
        failed(payment, event.payment_ref, event.message)
    elif event.kind == "refunded" and payment is not None:
        account = billing.account(payment.account_id)
        assert account is not None
        billing.lock(account.id)
        current = billing.payment(payment.id) or payment
        _refunded_to(account, current, event.amount_cents, "Refund to card (by the payment provider)", None)
    else:
        return "ignored"
    return "applied"


def owner_account(owner: User) -> Account:
    return account_for(owner)
