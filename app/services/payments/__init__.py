"""Payment providers: how a card is saved, charged and refunded, and how the provider's word on
it (a webhook) is read. The billing services (app/services/billing/) speak only this interface;
the provider is chosen once, when the app is created (`BILLING_PROVIDER`):

- `stripe` (app/services/payments/stripe_provider.py): the official `stripe` SDK - Checkout in
  setup mode to save a card, a PaymentIntent to charge it (off session, with an idempotency key),
  refunds, and webhooks verified by their signature;
- `offline` (app/services/payments/offline.py): for local runs and tests. No card exists and no
  money moves; every page that offers a payment says so.

Amounts cross this interface in cents (integers), as the providers count them."""

from __future__ import annotations

from flask import Flask, current_app

from app.services.payments.offline import OfflineProvider
from app.services.payments.provider import (
    CardSetup,
    Charge,
    PaymentError,
    PaymentProvider,
    ProviderEvent,
    SavedCard,
    WebhookRefused,
)
from app.services.payments.stripe_provider import StripeProvider

EXTENSION = "credits_id.payments"
__all__ = [
    "CardSetup",
    "Charge",
    "PaymentError",
    "PaymentProvider",
    "ProviderEvent",
    "SavedCard",
    "WebhookRefused",
    "init_payments",
    "payment_provider",
]


def init_payments(app: Flask) -> None:
    """Choose the provider once, from the settings."""
    if app.config.get("BILLING_PROVIDER", "offline") == "stripe":
        app.extensions[EXTENSION] = StripeProvider(app.config["STRIPE_SECRET_KEY"], app.config["STRIPE_WEBHOOK_SECRET"])
    else:
        app.extensions[EXTENSION] = OfflineProvider()


def payment_provider() -> PaymentProvider:
    provider: PaymentProvider = current_app.extensions[EXTENSION]
    return provider
