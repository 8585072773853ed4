"""The offline payment provider: for local runs, demos and tests. There is no card and no money:
"saving a card" is a button on our own page, every charge succeeds at once, every refund too. The
billing pages say so wherever a payment is offered (`label`), so nobody mistakes it for the real
thing. It has no webhooks: what it does, it answers at once."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import url_for

from app.models.base import new_secret
from app.services.payments.provider import CardSetup, Charge, ProviderEvent, SavedCard, WebhookRefused

OFFLINE_TOKEN = "offline-test-card"


class OfflineProvider:
    name = "offline"
    label = "For local runs and tests: no card is charged and no money moves."
    live = False

    def start_card_setup(self, account_id: str, email: str, customer_ref: str | None, return_url: str) -> CardSetup:
        return CardSetup(url_for("console.billing_offline_card") + "?" + urlencode({"next": return_url}))

    def finish_card_setup(self, account_id: str, token: str) -> SavedCard | None:
        if token != OFFLINE_TOKEN:
            return None
        return SavedCard(f"offline_card_{new_secret(9)}", "Offline test card (not a real card)")

    def charge(
        self, account_id: str, payment_id: str, customer_ref: str | None, card_ref: str, amount_cents: int
    ) -> Charge:
        return Charge(f"offline_pay_{payment_id}", "succeeded")

    def refund(self, payment_ref: str, amount_cents: int, idempotency_key: str) -> str:
        return f"offline_refund_{idempotency_key}"

    def event(self, payload: bytes, signature: str | None) -> ProviderEvent:
        raise WebhookRefused("the offline provider sends no webhooks")
