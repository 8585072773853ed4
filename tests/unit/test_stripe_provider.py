"""The Stripe provider on the official SDK, with only the HTTP boundary stubbed: `FakeStripe`
answers the requests the SDK sends with the API's documented JSON shapes and keeps what it was
asked (method, path, form fields, idempotency key), so these tests see exactly what would go over
the wire. Webhooks are signed as Stripe signs them (`t=...,v1=HMAC-SHA256(secret, "t.payload")`)
and go through the real endpoint: verified, applied once, in any order."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
import stripe

from app.core.extensions import db
from app.services.billing.ledger import account_for, balance
from app.services.billing.payments import begin_load, charge, settle
from app.services.payments import EXTENSION
from app.services.payments.stripe_provider import StripeProvider
from app.store import store
from tests.key_support import make_developer

WEBHOOK_SECRET = "whsec_test_secret"
D = Decimal


@dataclass
class Sent:
    method: str
    path: str
    form: dict[str, list[str]]
    idempotency_key: str | None


class FakeStripe(stripe.HTTPClient):
    """Stripe's API as the SDK sees it over HTTP: canned answers per (method, path)."""

    name = "fake"

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[Sent] = []
        self.answers: dict[tuple[str, str], tuple[int, dict]] = {}

    def answer(self, method: str, path: str, body: dict, status: int = 200) -> None:
        self.answers[(method, path)] = (status, body)

    def request(self, method, url, headers, post_data=None, *, _usage=None):
        parts = urlsplit(url)
        form = parse_qs(post_data or parts.query or "")
        self.sent.append(Sent(method.upper(), parts.path, form, (headers or {}).get("Idempotency-Key")))
        status, body = self.answers.get(
            (method.upper(), parts.path),
            (404, {"error": {"type": "invalid_request_error", "message": "No such route"}}),
        )
        return json.dumps(body), status, {"request-id": "req_test"}

    def close(self):
        pass


@pytest.fixture
def fake():
    return FakeStripe()


@pytest.fixture
def provider(app, fake):
    chosen = StripeProvider("sk_test_123", WEBHOOK_SECRET, http_client=fake)
    before = app.extensions[EXTENSION]
    app.extensions[EXTENSION] = chosen
    yield chosen
    app.extensions[EXTENSION] = before


def signed(payload: bytes, secret: str = WEBHOOK_SECRET, at: int | None = None) -> str:
    at = at or int(time.time())
    digest = hmac.new(secret.encode(), f"{at}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def event(event_id: str, kind: str, obj: dict, created: int | None = None) -> bytes:
    return json.dumps(
        {
            "id": event_id,
            "object": "event",
            "type": kind,
            "api_version": "2024-06-20",
            "created": created or int(time.time()),
            "livemode": False,
            "data": {"object": obj},
        }
    ).encode()


def deliver(client, payload: bytes, signature: str | None = None):
    return client.post(
        "/billing/stripe/webhook",
        data=payload,
        headers={"Stripe-Signature": signature or signed(payload), "Content-Type": "application/json"},
    )


def card_saved_on(account_id: str) -> None:
    store().billing.change(
        account_id,
        {
            "card_provider": "stripe",
            "card_ref": "pm_card_visa",
            "customer_ref": "cus_123",
            "card_label": "Visa ending 4242",
        },
    )
    db.session.commit()


def test_saving_a_card_makes_a_customer_once_then_a_checkout_session_in_setup_mode(provider, fake, app):
    fake.answer("POST", "/v1/customers", {"id": "cus_123", "object": "customer"})
    fake.answer(
        "POST",
        "/v1/checkout/sessions",
        {
            "id": "cs_test_1",
            "object": "checkout.session",
            "mode": "setup",
            "url": "https://checkout.stripe.com/c/pay/cs_test_1",
        },
    )
    with app.test_request_context():
        setup = provider.start_card_setup(
            "acct-1", "dev@example.com", None, "https://id.example/console/billing/card/return"
        )
    assert setup.redirect_url.startswith("https://checkout.stripe.com/") and setup.customer_ref == "cus_123"
    customer, session = fake.sent
    assert customer.idempotency_key == "customer-acct-1" and customer.form["metadata[account_id]"] == ["acct-1"]
    assert session.form["mode"] == ["setup"] and session.form["customer"] == ["cus_123"]
    assert session.form["setup_intent_data[metadata][account_id]"] == ["acct-1"]
    assert session.form["success_url"] == ["https://id.example/console/billing/card/return?setup={CHECKOUT_SESSION_ID}"]


def test_back_from_checkout_the_card_is_read_from_the_session_only_if_it_is_this_accounts(provider, fake):
    fake.answer(
        "GET",
        "/v1/checkout/sessions/cs_test_1",
        {
            "id": "cs_test_1",
            "object": "checkout.session",
            "customer": "cus_123",
            "metadata": {"account_id": "acct-1"},
            "setup_intent": {
                "id": "seti_1",
                "object": "setup_intent",
                "status": "succeeded",
                "payment_method": {
                    "id": "pm_1",
                    "object": "payment_method",
                    "card": {"brand": "visa", "last4": "4242"},
                },
            },
        },
    )
    card = provider.finish_card_setup("acct-1", "cs_test_1")
    assert (
        card is not None
        and card.card_ref == "pm_1"
        and card.label == "Visa ending 4242"
        and card.customer_ref == "cus_123"
    )
    assert fake.sent[0].form["expand[0]"] == ["setup_intent.payment_method"]
    assert provider.finish_card_setup("someone-else", "cs_test_1") is None
    assert provider.finish_card_setup("acct-1", "not-a-session") is None


def test_a_load_charges_the_saved_card_in_cents_with_an_idempotency_key(provider, fake):
    dev = make_developer()
    account = account_for(dev)
    card_saved_on(account.id)
    payment = begin_load(account_for(dev), D("25"))
    db.session.commit()
    fake.answer(
        "POST",
        "/v1/payment_intents",
        {
            "id": "pi_1",
            "object": "payment_intent",
            "status": "succeeded",
            "amount": 2500,
            "amount_received": 2500,
            "metadata": {},
        },
    )
    settle(payment, charge(payment))
    db.session.commit()
    [sent] = fake.sent
    assert sent.form["amount"] == ["2500"] and sent.form["currency"] == ["usd"] and sent.form["confirm"] == ["true"]
    assert sent.form["off_session"] == ["true"] and sent.form["payment_method"] == ["pm_card_visa"]
    assert sent.form["metadata[payment_id]"] == [payment.id] and sent.idempotency_key == f"load-{payment.id}"
    assert balance(account_for(dev)) == D("25.00") and store().billing.payment(payment.id).provider_ref == "pi_1"


def test_a_declined_card_loads_nothing_and_says_why(provider, fake):
    dev = make_developer()
    card_saved_on(account_for(dev).id)
    payment = begin_load(account_for(dev), D("10"))
    db.session.commit()
    fake.answer(
        "POST",
        "/v1/payment_intents",
        {
            "error": {
                "type": "card_error",
                "code": "card_declined",
                "decline_code": "insufficient_funds",
                "message": "Your card has insufficient funds.",
                "payment_intent": {"id": "pi_2", "object": "payment_intent", "status": "requires_payment_method"},
            }
        },
        status=402,
    )
    outcome = charge(payment)
    settle(payment, outcome)
    db.session.commit()
    assert outcome.status == "failed" and "insufficient funds" in outcome.message
    assert store().billing.payment(payment.id).status == "failed" and balance(account_for(dev)) == D("0.00")


def test_webhooks_are_verified_applied_once_and_in_any_order(provider, fake, app):
    client = app.test_client()
    dev = make_developer()
    card_saved_on(account_for(dev).id)
    payment = begin_load(account_for(dev), D("100"))
    db.session.commit()  # pending: the provider's answer has not come back yet
    metadata = {"account_id": account_for(dev).id, "payment_id": payment.id}
    succeeded = event(
        "evt_1",
        "payment_intent.succeeded",
        {
            "id": "pi_9",
            "object": "payment_intent",
            "status": "succeeded",
            "amount": 10000,
            "amount_received": 10000,
            "metadata": metadata,
        },
    )
    assert deliver(client, succeeded, signed(succeeded, "whsec_wrong")).status_code == 400  # not Stripe's
    assert deliver(client, succeeded, signed(succeeded, at=int(time.time()) - 3600)).status_code == 400  # too old
    assert deliver(client, succeeded).get_json()["outcome"] == "applied"
    assert deliver(client, succeeded).get_json()["outcome"] == "replayed"  # a retried delivery
    late_failure = event(
        "evt_0",
        "payment_intent.payment_failed",
        {
            "id": "pi_9",
            "object": "payment_intent",
            "status": "requires_payment_method",
            "metadata": metadata,
            "last_payment_error": {"message": "declined"},
        },
        created=int(time.time()) - 60,
    )
    assert deliver(client, late_failure).get_json()["outcome"] == "applied"
    # The provider's own answer arrives last: the credit is already there and is not posted again.
    from app.services.payments import Charge

    settle(store().billing.payment(payment.id), Charge("pi_9", "succeeded"))
    db.session.commit()
    assert store().billing.payment(payment.id).status == "succeeded"
    assert [(e.kind, e.amount) for e in store().billing.entries(account_for(dev).id)] == [("load", D("100.00"))]
    # Refunds made in Stripe's dashboard: the total refunded so far; an older total arriving late adds nothing.
    for event_id, total in (("evt_r2", 3000), ("evt_r1", 1000)):
        refunded = event(
            event_id,
            "charge.refunded",
            {"id": "ch_9", "object": "charge", "payment_intent": "pi_9", "amount_refunded": total},
        )
        assert deliver(client, refunded).status_code == 200
    assert balance(account_for(dev)) == D("70.00") and store().billing.payment(payment.id).refunded_cents == 3000


def test_an_event_about_an_unknown_payment_is_asked_again_and_a_saved_card_brings_the_starter_credit(
    provider, fake, app
):
    client = app.test_client()
    unknown = event(
        "evt_u",
        "payment_intent.succeeded",
        {"id": "pi_x", "object": "payment_intent", "amount_received": 500, "metadata": {}},
    )
    assert deliver(client, unknown).status_code == 409
    assert deliver(client, unknown).status_code == 409  # not noted as applied: Stripe may retry it
    dev = make_developer()
    account = account_for(dev)
    db.session.commit()
    fake.answer(
        "GET",
        "/v1/payment_methods/pm_7",
        {"id": "pm_7", "object": "payment_method", "card": {"brand": "mastercard", "last4": "4444"}},
    )
    saved = event(
        "evt_s",
        "setup_intent.succeeded",
        {
            "id": "seti_7",
            "object": "setup_intent",
            "status": "succeeded",
            "customer": "cus_7",
            "payment_method": "pm_7",
            "metadata": {"account_id": account.id},
        },
    )
    assert deliver(client, saved).get_json()["outcome"] == "applied"
    assert deliver(client, saved).get_json()["outcome"] == "replayed"
    db.session.expire_all()
    after = account_for(dev)
    assert (
        after.card_label == "Mastercard ending 4444" and after.customer_ref == "cus_7" and balance(after) == D("5.00")
    )


def test_offline_payments_take_no_webhooks(app):
    assert app.test_client().post("/billing/stripe/webhook", data=b"{}").status_code == 404


def signed_in_client(app, user):
    """A test client with a live session of `user` and the CSRF token its forms carry (as the
    malformed-input sweep makes one: tests/integration/test_malformed_input.py)."""
    import secrets
    from datetime import timedelta

    from itsdangerous import URLSafeTimedSerializer

    from app.models import LoginSession
    from app.models.base import sha256_hex, utcnow

    sid, raw, now = secrets.token_urlsafe(32), secrets.token_hex(20), utcnow()
    db.session.add(
        LoginSession(session_hash=sha256_hex(sid), user_id=user.id, auth_time=now, expires_at=now + timedelta(hours=1))
    )
    db.session.commit()
    data = {"sid": sid, "bid": secrets.token_urlsafe(16), "csrf_token": raw, "_permanent": True}
    client = app.test_client()
    client.set_cookie("credits_id_session", app.session_interface.get_signing_serializer(app).dumps(data))
    return client, URLSafeTimedSerializer(app.secret_key, salt="wtf-csrf-token").dumps(raw)


def test_the_console_saves_a_card_through_checkout_and_loads_credits_through_stripe(provider, fake, app):
    dev = make_developer()
    client, token = signed_in_client(app, dev)
    account_id = account_for(dev).id
    db.session.commit()
    fake.answer("POST", "/v1/customers", {"id": "cus_c", "object": "customer"})
    fake.answer(
        "POST",
        "/v1/checkout/sessions",
        {"id": "cs_c", "object": "checkout.session", "url": "https://checkout.stripe.com/c/pay/cs_c"},
    )
    started = client.post("/console/billing/card", data={"csrf_token": token})
    assert started.status_code == 303 and started.headers["Location"] == "https://checkout.stripe.com/c/pay/cs_c"
    fake.answer(
        "GET",
        "/v1/checkout/sessions/cs_c",
        {
            "id": "cs_c",
            "object": "checkout.session",
            "customer": "cus_c",
            "metadata": {"account_id": account_id},
            "setup_intent": {
                "id": "seti_c",
                "object": "setup_intent",
                "status": "succeeded",
                "payment_method": {
                    "id": "pm_c",
                    "object": "payment_method",
                    "card": {"brand": "visa", "last4": "1881"},
                },
            },
        },
    )
    back = client.get("/console/billing/card/return?setup=cs_c")
    assert back.status_code == 303
    page = client.get("/console/billing").get_data(as_text=True)
    assert "Visa ending 1881" in page and "Payments by Stripe" in page and "Offline payments" not in page
    fake.answer(
        "POST",
        "/v1/payment_intents",
        {"id": "pi_c", "object": "payment_intent", "status": "succeeded", "amount": 10000, "amount_received": 10000},
    )
    submission = "s" * 22
    loaded = client.post("/console/billing/load", data={"csrf_token": token, "submission": submission, "amount": "100"})
    assert loaded.status_code == 303
    db.session.expire_all()
    assert balance(account_for(dev)) == D("105.00")  # the starter credit and the load
    charge_sent = next(s for s in fake.sent if s.path == "/v1/payment_intents")
    assert charge_sent.form["customer"] == ["cus_c"] and charge_sent.form["payment_method"] == ["pm_c"]
