"""The Stripe payment provider, on the official `stripe` SDK (StripeClient).

- **Saving a card**: a Customer per billing account (created once: its idempotency key is the
  account's id), then a Checkout Session in `setup` mode; Stripe hosts the card form, so no card
  number ever reaches us. Back from Checkout the console reads the session (`finish_card_setup`),
  and the `setup_intent.succeeded` webhook says the same thing again - whichever comes first saves
  the card, the other finds it saved.
- **Charging**: a PaymentIntent confirmed at once, off session, on the saved card, in cents, with
  our payment's id as the idempotency key (a retried request never charges twice) and in its
  metadata (so a webhook that arrives before our own answer still finds the payment).
- **Refunds**: a Refund on the PaymentIntent, with an idempotency key.
- **Webhooks**: verified by their `Stripe-Signature` (HMAC-SHA256 with the endpoint's secret and a
  five-minute tolerance) before anything is read; app/services/billing/payments.py applies each
  event once (a replay is acknowledged and ignored) and in any order (a failure reported after the
  payment succeeded changes nothing; refunds carry the total refunded so far, so an older one
  arriving late adds nothing)."""

from __future__ import annotations

from typing import Any

import stripe

from app.services.payments.provider import CardSetup, Charge, PaymentError, ProviderEvent, SavedCard, WebhookRefused

CURRENCY = "usd"


def _plain(obj: Any) -> dict[str, Any]:
    """A StripeObject as plain dicts (the SDK's objects are not dicts)."""
    if isinstance(obj, stripe.StripeObject):
        return obj.to_dict(recursive=True)
    return dict(obj or {})


def _card(method: dict[str, Any], customer_ref: str | None) -> SavedCard:
    card = method.get("card") or {}
    brand = str(card.get("brand") or "card").title()
    label = f"{brand} ending {card['last4']}" if card.get("last4") else brand
    return SavedCard(method["id"], label, customer_ref)


class StripeProvider:
    name = "stripe"
    label = "Payments by Stripe: your card is charged when you load credits."
    live = True

    def __init__(self, secret_key: str, webhook_secret: str, http_client: stripe.HTTPClient | None = None) -> None:
        self.webhook_secret = webhook_secret
        self.client = stripe.StripeClient(secret_key, http_client=http_client, max_network_retries=2)

    # -- cards -------------------------------------------------------------------------------------

    def start_card_setup(self, account_id: str, email: str, customer_ref: str | None, return_url: str) -> CardSetup:
        try:
            if customer_ref is None:
                customer = self.client.v1.customers.create(
                    {"email": email, "metadata": {"account_id": account_id}},
                    {"idempotency_key": f"customer-{account_id}"},
                )
                customer_ref = customer.id
            session = self.client.v1.checkout.sessions.create(
                {  # type: ignore[arg-type]  # a plain dict: the SDK types each key as its own literals
                    "mode": "setup",
                    "customer": customer_ref,
                    "currency": CURRENCY,
                    "payment_method_types": ["card"],
                    "success_url": f"{return_url}?setup={{CHECKOUT_SESSION_ID}}",
                    "cancel_url": return_url,
                    "metadata": {"account_id": account_id},
                    "setup_intent_data": {"metadata": {"account_id": account_id}},
                }
            )
        except stripe.StripeError as exc:
            raise PaymentError(exc.user_message or "The payment provider could not start saving a card.") from exc
        if not session.url:
            raise PaymentError("The payment provider gave no page to save a card on.")
        return CardSetup(session.url, customer_ref)

    def finish_card_setup(self, account_id: str, token: str) -> SavedCard | None:
        """The card saved by the Checkout Session `token`, if it is this account's and complete."""
        if not token.startswith("cs_"):
            return None
        try:
            session = _plain(
                self.client.v1.checkout.sessions.retrieve(token, {"expand": ["setup_intent.payment_method"]})
            )
        except stripe.StripeError:
            return None
        intent = session.get("setup_intent") or {}
        if (session.get("metadata") or {}).get("account_id") != account_id or not isinstance(intent, dict):
            return None
        method = intent.get("payment_method")
        if intent.get("status") != "succeeded" or not isinstance(method, dict):
            return None
        return _card(method, session.get("customer"))

    # -- money -------------------------------------------------------------------------------------

    def charge(
        self, account_id: str, payment_id: str, customer_ref: str | None, card_ref: str, amount_cents: int
    ) -> Charge:
        try:
            intent = self.client.v1.payment_intents.create(
                {
                    "amount": amount_cents,
                    "currency": CURRENCY,
                    "customer": customer_ref or "",
                    "payment_method": card_ref,
                    "off_session": True,
                    "confirm": True,
                    "description": "Credits ID prepaid credits",
                    "metadata": {"account_id": account_id, "payment_id": payment_id},
                },
                {"idempotency_key": f"load-{payment_id}"},
            )
        except stripe.CardError as exc:
            failed = _plain(exc.error.payment_intent) if exc.error and exc.error.payment_intent else {}
            return Charge(failed.get("id") or "", "failed", exc.user_message or "The card was declined.")
        except stripe.StripeError as exc:
            raise PaymentError(exc.user_message or "The payment provider could not charge the card.") from exc
        status = {"succeeded": "succeeded", "canceled": "failed", "requires_payment_method": "failed"}.get(
            intent.status, "pending"
        )
        return Charge(intent.id, status)

    def refund(self, payment_ref: str, amount_cents: int, idempotency_key: str) -> str:
        try:
            refund = self.client.v1.refunds.create(
                {"payment_intent": payment_ref, "amount": amount_cents}, {"idempotency_key": idempotency_key}
            )
        except stripe.StripeError as exc:
            raise PaymentError(exc.user_message or "The payment provider could not refund.") from exc
        return refund.id

    # -- webhooks ----------------------------------------------------------------------------------

    def event(self, payload: bytes, signature: str | None) -> ProviderEvent:
        try:
            event = self.client.construct_event(payload, signature, self.webhook_secret)
        except (ValueError, stripe.SignatureVerificationError) as exc:
            raise WebhookRefused(str(exc)) from exc
        plain = _plain(event)
        kind, obj = plain.get("type", ""), (plain.get("data") or {}).get("object") or {}
        metadata = obj.get("metadata") or {}
        common = {"id": plain["id"], "type": kind, "account_id": metadata.get("account_id")}
        if kind == "setup_intent.succeeded" and obj.get("payment_method"):
            method = obj["payment_method"]
            if isinstance(method, str):
                try:
                    method = _plain(self.client.v1.payment_methods.retrieve(method))
                except stripe.StripeError as exc:
                    raise PaymentError("could not read the saved card") from exc
            return ProviderEvent(**common, kind="card_saved", card=_card(method, obj.get("customer")))
        if kind == "payment_intent.succeeded":
            return ProviderEvent(
                **common,
                kind="payment_succeeded",
                payment_id=metadata.get("payment_id"),
                payment_ref=obj.get("id"),
                amount_cents=int(obj.get("amount_received") or obj.get("amount") or 0),
            )
        if kind == "payment_intent.payment_failed":
            error = obj.get("last_payment_error") or {}
            return ProviderEvent(
                **common,
                kind="payment_failed",
                payment_id=metadata.get("payment_id"),
                payment_ref=obj.get("id"),
                message=str(error.get("message") or "The card was declined."),
            )
        if kind == "charge.refunded" and obj.get("payment_intent"):
            return ProviderEvent(
                **common,
                kind="refunded",
                payment_ref=obj["payment_intent"],
                amount_cents=int(obj.get("amount_refunded") or 0),
            )
        return ProviderEvent(**common, kind="ignored")
