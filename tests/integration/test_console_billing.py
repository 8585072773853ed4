"""The billing pages over HTTP: a developer sees only their own account, admins every one; bad
input is a clear refusal with nothing written; a load sent twice charges once."""

from __future__ import annotations

from decimal import Decimal

from app.core.extensions import db
from app.models import BillingEntry, BillingPayment
from app.services.billing.ledger import account_for, balance
from app.services.billing.payments import save_card
from app.services.payments import SavedCard
from tests.factories import make_member
from tests.flows import csrf_token
from tests.integration.console_support import flashes, post_form, signed_in


def fresh():
    db.session.expire_all()


def landed(browser, response):
    """The page a 303 leads to (the console's answer after a form)."""
    assert response.status_code == 303, response.text[:300]
    return browser.get(response.headers["Location"])


def test_a_developer_sees_only_their_own_account(live_server):
    dev, other = make_member(role="developer"), make_member(role="developer")
    theirs = account_for(other)
    db.session.commit()
    browser = signed_in(live_server.url, dev.email)
    assert browser.get("/console/billing").status_code == 200
    assert browser.get("/console/billing/accounts").status_code == 403
    assert browser.get(f"/console/billing/accounts/{theirs.id}").status_code == 403
    assert browser.get(f"/console/billing/accounts/{theirs.id}/statements/2026-11.csv").status_code == 403
    admin = signed_in(live_server.url, make_member(role="admin").email)
    listing = admin.get("/console/billing/accounts")
    assert listing.status_code == 200 and other.email in listing.text and dev.email in listing.text
    assert admin.get(f"/console/billing/accounts/{theirs.id}").status_code == 200
    assert admin.get("/console/billing/accounts/no-such-account").status_code == 404


def test_bad_input_is_refused_and_writes_nothing(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    no_card = post_form(browser, "/console/billing", "/console/billing/load", {"amount": "25"})
    assert no_card.status_code == 400 and "Add a card first" in no_card.text
    assert browser.post("/console/billing/load", data={"amount": "25"}).status_code == 400  # no CSRF token
    assert browser.post("/console/billing/plan", data={"plan": "build"}).status_code == 400
    short = landed(browser, post_form(browser, "/console/billing", "/console/billing/plan", {"plan": "build"}))
    assert "load credits first" in " ".join(flashes(short.text))
    nonsense = landed(browser, post_form(browser, "/console/billing", "/console/billing/plan", {"plan": "platinum"}))
    assert "Plan must be one of" in " ".join(flashes(nonsense.text))
    for month in ("2026-13", "nonsense", "2999-01"):
        page = landed(browser, browser.get(f"/console/billing/statements/{month}"))
        assert page.status_code == 200 and flashes(page.text), month
    forged = landed(browser, browser.get("/console/billing/card/return?setup=forged"))
    assert "No card was saved." in flashes(forged.text)
    fresh()
    assert db.session.query(BillingEntry).count() == 0 and db.session.query(BillingPayment).count() == 0
    assert account_for(dev).card_ref is None


def test_a_load_sent_twice_charges_once(live_server):
    dev = make_member(role="developer")
    save_card(account_for(dev), SavedCard("offline_card_twice", "Offline test card"))
    db.session.commit()
    browser = signed_in(live_server.url, dev.email)
    page = browser.get("/console/billing")
    token = csrf_token(page.text)
    import re

    submission = re.search(r'name="submission" type="hidden" value="([^"]+)"', page.text).group(1)
    for _ in range(2):
        response = landed(
            browser,
            browser.post(
                "/console/billing/load", data={"csrf_token": token, "submission": submission, "amount": "100"}
            ),
        )
    assert "already loaded" in " ".join(flashes(response.text))
    fresh()
    assert balance(account_for(dev)) == Decimal("105.00")  # the starter credit and one load
    assert db.session.query(BillingPayment).count() == 1


def test_an_admin_adjusts_with_a_reason_and_sets_enterprise_terms(live_server):
    dev = make_member(role="developer")
    account = account_for(dev)
    db.session.commit()
    admin = signed_in(live_server.url, make_member(role="admin").email)
    path = f"/console/billing/accounts/{account.id}"
    refused = post_form(admin, path, f"{path}/adjust", {"amount": "12.345", "memo": "x"})
    assert refused.status_code == 400 and "to the cent" in refused.text
    posted = landed(admin, post_form(admin, path, f"{path}/adjust", {"amount": "-2.50", "memo": "goodwill reversed"}))
    assert "Adjustment of -2.50 USD posted." in flashes(posted.text)
    bad_terms = post_form(admin, path, f"{path}/enterprise", {"storage_allowed": "y", "terms_until": ""})
    assert bad_terms.status_code == 400 and "Only an enterprise agreement allows caching" in bad_terms.text
    not_a_date = post_form(admin, path, f"{path}/enterprise", {"enterprise": "y", "terms_until": "2027-02-30"})
    assert not_a_date.status_code == 400
    saved = landed(
        admin,
        post_form(
            admin, path, f"{path}/enterprise", {"enterprise": "y", "storage_allowed": "y", "terms_until": "2027-12-31"}
        ),
    )
    assert "Enterprise terms saved." in flashes(saved.text)
    fresh()
    after = account_for(dev)
    assert after.enterprise and after.storage_allowed and str(after.terms_until) == "2027-12-31"
    assert balance(after) == Decimal("-2.50")
    trail = admin.get("/console/audit").text  # every money change is on the admins' audit trail
    assert "Billing ledger entry posted" in trail and "Enterprise terms changed" in trail
