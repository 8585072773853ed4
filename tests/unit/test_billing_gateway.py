"""Billing on the request path: the gateway refuses a key whose owner's credits are used up or
whose month reached the spend ceiling (402, the gateway's shape, a message that says what to do),
mails the owner once at 80 %, lets enterprise accounts through with their own key limits, and
never bills a member's workspace key; plus the operators' `flask billing` commands."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest

from app.core.extensions import db, limiter
from app.models import ApiKey, ApiUsage, BillingEntry
from app.services.billing import enterprise, standing
from app.services.billing.ledger import account_for, adjust, balance
from app.services.metering import utc_day
from app.store import store
from tests.api_support import make_catalog
from tests.key_support import (
    index_catalog,
    key_header,
    make_developer,
    make_key,
    make_roster,
    make_workspace_key,
    opened_on,
)

D = Decimal


@pytest.fixture(autouse=True)
def fresh():
    limiter.reset()
    standing.forget()


@pytest.fixture
def catalog():
    made = make_catalog(credits=2)
    index_catalog()
    return made


def meter(key: ApiKey, calls: int, day: date | None = None) -> None:
    """Add `calls` to the key's meter for `day` (today), as that many requests would."""
    row = db.session.get(ApiUsage, (key.id, day or utc_day(), 0))  # the folded shard (app/store/meter.py)
    if row is None:
        db.session.add(ApiUsage(key_id=key.id, day=day or utc_day(), count=calls))
    else:
        row.count += calls
    db.session.commit()
    standing.forget()


def assert_payment_required(response, *words: str) -> str:
    assert response.status_code == 402, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"message", "request_id"}  # the gateway's own shape, as its 401/403/429
    assert body["message"].startswith("Payment required") and "/console/billing" in body["message"]
    for word in words:
        assert word in body["message"]
    assert response.headers["X-Gateway-Request-Id"] == body["request_id"]
    return body["message"]


def test_a_key_without_credits_is_refused_with_what_to_do(client, catalog):
    _key, value = make_key(funded=False)
    assert_payment_required(client.get("/v1/roles", headers=key_header(value)), "Load credits")
    assert db.session.query(ApiUsage).count() == 0  # a refused call is not metered


def test_calls_not_yet_posted_count_against_the_balance(client, catalog):
    dev = make_developer()
    key, value = make_key(owner=dev, funded=False)
    adjust(account_for(dev), D("10"), "test")
    db.session.commit()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    meter(key, 399)  # with the call above: 400 calls = 10.00 at 0.025, all of the balance
    assert_payment_required(client.get("/v1/roles", headers=key_header(value)), "used up")


def test_the_standing_is_kept_for_a_bounded_time(client, catalog, app):
    dev = make_developer()
    key, value = make_key(owner=dev, funded=False)
    adjust(account_for(dev), D("10"), "test")
    db.session.commit()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    # 999 more in another shard of the day's count: 1,000 calls, 25.00, past the balance, but the
    # gateway keeps what it read.
    db.session.add(ApiUsage(key_id=key.id, day=utc_day(), shard=-1, count=999))
    db.session.commit()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200  # kept: not read again
    app.config["BILLING_STANDING_SECONDS"] = 0
    try:
        standing.forget()
        assert_payment_required(client.get("/v1/roles", headers=key_header(value)))
    finally:
        app.config["BILLING_STANDING_SECONDS"] = 30


def test_the_spend_ceiling_refuses_and_warns_once_at_80_percent(client, catalog, mailbox):
    dev = make_developer()
    key, value = make_key(owner=dev, funded=False)
    adjust(account_for(dev), D("5000"), "test")  # no load: the ceiling is 10 x the minimum load, 100
    db.session.commit()
    meter(key, 3_300)  # 82.50 at list price: 82 % of 100
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    mail = mailbox.wait_for(dev.email, subject="spend ceiling")
    assert "82 %" in mail.subject and "/console/billing" in mail.text
    standing.forget()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    import time

    time.sleep(0.5)
    assert len(mailbox.to(dev.email)) == 1  # once a month
    meter(key, 700)  # 4,002 calls: 100.05 at list price
    standing.forget()
    message = assert_payment_required(client.get("/v1/roles", headers=key_header(value)), "spend ceiling")
    assert "100.00" in message and "enterprise" in message


def test_enterprise_terms_lift_the_ceiling_and_set_the_keys_limits(client, catalog):
    dev = make_developer()
    key, value = make_key(owner=dev, funded=False)
    account = account_for(dev)
    enterprise.set_terms(account, True, True, date(2027, 12, 31), "MSA-7")
    enterprise.set_key_limits(key, 1200, 50)
    db.session.commit()
    meter(key, 50_000)  # far past any ceiling, and no credits: invoiced under the agreement
    response = client.get("/v1/roles", headers=key_header(value))
    assert response.status_code == 200 and response.headers["RateLimit-Limit"] == "1200"
    enterprise.set_terms(account_for(dev), False, False, None, "")
    db.session.commit()
    db.session.expire_all()
    assert db.session.get(ApiKey, key.id).custom_per_second is None  # ending the terms clears the limits


def test_storage_is_allowed_only_under_enterprise_terms_for_a_term(app):
    from app.services.billing.ledger import BillingError

    account = account_for(make_developer())
    with pytest.raises(BillingError, match="only an enterprise"):
        enterprise.set_terms(account, False, True, date(2027, 1, 1), "")
    with pytest.raises(BillingError, match="term ends"):
        enterprise.set_terms(account, True, True, None, "")
    key, _ = make_key(funded=False)
    with pytest.raises(BillingError, match="enterprise terms"):
        enterprise.set_key_limits(key, 100, None)


def test_workspace_keys_are_not_billed(client, catalog):
    roster = make_roster(profiles=(catalog.mine,))
    _, value = make_workspace_key(roster)
    assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)).status_code == 200


# -- flask billing ----------------------------------------------------------------------------------


def test_the_posting_command_posts_once_and_the_operator_commands_adjust_and_refund(app):
    from app.services.billing.payments import begin_load, charge, save_card, settle
    from app.services.payments import SavedCard

    dev = make_developer()
    key, _ = make_key(owner=dev, funded=False)
    account = account_for(dev)
    save_card(account, SavedCard("offline_card_cli", "Offline test card"))
    db.session.commit()
    payment = begin_load(account_for(dev), D("100"))
    db.session.commit()
    settle(payment, charge(payment))
    db.session.commit()
    opened_on(dev, utc_day() - timedelta(days=1))
    meter(key, 4, utc_day() - timedelta(days=1))
    runner = app.test_cli_runner()
    first = runner.invoke(args=["billing", "post", "--json"])
    second = runner.invoke(args=["billing", "post", "--json"])
    assert first.exit_code == 0 and '"lines": 1' in first.output and '"amount": "0.10"' in first.output
    assert second.exit_code == 0 and '"lines": 0' in second.output
    adjusted = runner.invoke(args=["billing", "adjust", "--reason", "goodwill reversed", dev.email, "--", "-0.90"])
    assert adjusted.exit_code == 0 and "balance 104.00 USD" in adjusted.output, adjusted.output
    refused = runner.invoke(args=["billing", "adjust", dev.email, "abc", "--reason", "x"])
    assert refused.exit_code == 1 and "not an amount" in refused.output
    refunded = runner.invoke(args=["billing", "refund", payment.id, "20", "--reason", "asked"])
    assert refunded.exit_code == 0 and "balance 84.00 USD" in refunded.output, refunded.output
    db.session.expire_all()
    assert balance(account_for(dev)) == D("84.00")
    month = utc_day().strftime("%Y-%m")
    csv = runner.invoke(args=["billing", "statement", dev.email, "--month", month])
    assert csv.exit_code == 0 and csv.output.startswith("section,posted_at,kind")
    kinds = [e.kind for e in db.session.scalars(db.select(BillingEntry).order_by(BillingEntry.id))]
    assert kinds == ["starter", "load", "usage", "adjustment", "refund"]
    assert store().billing.payment(payment.id).refunded_cents == 2000
