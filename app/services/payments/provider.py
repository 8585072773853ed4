"""The payment-provider interface: what billing asks of a provider, in cents, and what a provider's
webhook says, in billing's words (app/services/payments/__init__.py chooses the provider)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class PaymentError(Exception):
    """The provider refused or failed: the message is safe to show the developer."""


class WebhookRefused(Exception):
    """A webhook delivery that is not the provider's (bad signature, unreadable body)."""


@dataclass(frozen=True)
class CardSetup:
    """Where to send the developer to save a card, and the provider's customer id if it made one."""

    redirect_url: str
    customer_ref: str | None = None


@dataclass(frozen=True)
class SavedCard:
    card_ref: str  # the provider's id of the payment method
    label: str  # "Visa ending 4242": never more of the card than that
    customer_ref: str | None = None


@dataclass(frozen=True)
class Charge:
    ref: str  # the provider's id of the payment
    status: str  # succeeded, pending or failed
    message: str = ""


@dataclass(frozen=True)
class ProviderEvent:
    """A webhook event in the words billing needs. `kind`: card_saved, payment_succeeded,
    payment_failed, refunded, or ignored (a type billing does not act on)."""

    id: str
    type: str
    kind: str
    account_id: str | None = None
    payment_id: str | None = None  # ours, from the payment's metadata
    payment_ref: str | None = None  # the provider's
    amount_cents: int = 0  # payment_succeeded: the amount received; refunded: refunded so far in all
    card: SavedCard | None = None
    message: str = ""
    extra: dict[str, str] = field(default_factory=dict)


class PaymentProvider(Protocol):
    name: str
    label: str  # what the billing page says about payments
    live: bool  # False: no money moves (the offline provider)

    def start_card_setup(self, account_id: str, email: str, customer_ref: str | None, return_url: str) -> CardSetup: ...
    def finish_card_setup(self, account_id: str, token: str) -> SavedCard | None: ...
    def charge(
        self, account_id: str, payment_id: str, customer_ref: str | None, card_ref: str, amount_cents: int
    ) -> Charge: ...
    def refund(self, payment_ref: str, amount_cents: int, idempotency_key: str) -> str: ...
    def event(self, payload: bytes, signature: str | None) -> ProviderEvent: ...
