"""In a real browser: a developer saves the offline test card and loads credits, buys a plan, sees
the spend ceiling refuse their key and an admin lift it with enterprise terms, and reads a monthly
statement and downloads it as CSV. Screenshots under artifacts/e2e/ (the docs use some)."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import requests

from app.core.extensions import db
from app.models import ApiUsage
from app.services.billing.ledger import account_for, adjust
from app.services.billing.posting import post_usage
from app.services.metering import utc_day
from tests.conftest import ROOT
from tests.factories import PASSWORD, make_member
from tests.key_support import make_key, opened_on

DOCS_IMG = ROOT / "docs" / "img"


def to_docs(shot, name: str) -> None:
    """UPDATE_DOCS_SCREENSHOTS=1 refreshes docs/billing.md's pictures from these tests."""
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMG / name)


def sign_in(page, live_server, email: str, path: str = "/console/billing") -> None:
    page.goto(live_server(f"/login?next={path}"))
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{path}")


def test_load_credits_with_the_offline_provider(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    _, value = make_key(owner=dev, funded=False)
    refused = requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30)
    assert refused.status_code == 402 and "Load credits" in refused.json()["message"]

    sign_in(page, live_server, dev.email)
    expect(page.locator("#offline-payments")).to_contain_text("no card is charged")
    expect(page.get_by_role("alert")).to_contain_text("credits are used up")
    expect(page.locator("#balance")).to_have_text("0.00 USD")
    shots.take("billing-no-credits")
    with page.expect_navigation():
        page.get_by_role("button", name="Add a card").click()
    expect(page.get_by_role("heading", name="Save an offline test card")).to_be_visible()
    expect(page.locator("#offline-payments")).to_be_visible()
    shots.take("offline-card")
    with page.expect_navigation():
        page.get_by_role("button", name="Save the offline test card").click()
    expect(page.locator(".flash")).to_contain_text("5.00 USD of starter credit added")
    expect(page.locator("#balance")).to_have_text("5.00 USD")
    expect(page.locator("#card")).to_contain_text("Offline test card")

    with page.expect_navigation():
        page.get_by_role("button", name="25 USD").click()
    expect(page.locator(".flash")).to_contain_text("25.00 USD of credits loaded")
    expect(page.locator("#balance")).to_have_text("30.00 USD")
    page.get_by_label("Another amount (from 10 USD)").fill("9.50")
    with page.expect_navigation():
        page.get_by_role("button", name="Load this amount").click()
    expect(page.locator("#amount-error")).to_have_text("Loads start at 10 USD.")
    expect(page.get_by_label("Another amount (from 10 USD)")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Another amount (from 10 USD)").fill("12.34")
    with page.expect_navigation():
        page.get_by_label("Another amount (from 10 USD)").press("Enter")  # the typed amount, not a preset
    expect(page.locator("#balance")).to_have_text("42.34 USD")
    expect(page.locator("table.ledger")).to_contain_text("Starter credit")
    to_docs(shots.take("billing-loaded"), "billing.png")
    assert requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30).status_code == 200
    assert page.problems.messages == [], page.problems.messages


def test_buy_a_plan_and_the_keys_limits_follow(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    key, value = make_key(owner=dev, funded=False)
    adjust(account_for(dev), Decimal("1000"), "test credits")
    db.session.commit()
    sign_in(page, live_server, dev.email)
    buy = page.locator("#plan-build").get_by_role("button")
    expect(buy).to_contain_text("Buy Build")
    with page.expect_navigation():
        buy.click()
    expect(page.locator(".flash")).to_contain_text("You are on Build")
    expect(page.locator("#plan")).to_contain_text("Build")
    shots.take("billing-on-build")
    response = requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30)
    assert response.status_code == 200 and response.headers["RateLimit-Limit"] == "1500"  # 25 a second
    page.goto(live_server(f"/console/api-keys/{key.id}"))
    expect(page.locator("#key-limits")).to_contain_text("25 per second")
    expect(page.locator("#data-use")).to_contain_text("may not be cached or stored")
    page.goto(live_server("/console/billing"))
    with page.expect_navigation():
        page.get_by_role("button", name="Cancel Build").click()
    expect(page.locator(".flash")).to_contain_text("Build stays until the month ends")
    expect(page.locator("#plan")).to_contain_text("Pay as you go from the 1st of next month")
    shots.take("billing-build-cancelled")
    assert page.problems.messages == [], page.problems.messages


def test_the_ceilings_refusal_and_enterprise_terms(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    key, value = make_key(owner=dev, funded=False)
    adjust(account_for(dev), Decimal("500"), "test credits")  # no load: the ceiling is 10 x 10
    db.session.add(ApiUsage(key_id=key.id, day=utc_day(), count=4_000))  # 100.00 at list price
    db.session.commit()
    refused = requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30)
    body = refused.json()
    assert refused.status_code == 402 and set(body) == {"message", "request_id"}
    assert "spend ceiling" in body["message"] and "/console/billing" in body["message"]

    sign_in(page, live_server, dev.email)
    expect(page.get_by_role("alert")).to_contain_text("reached the spend ceiling")
    expect(page.locator("#ceiling")).to_contain_text("100 % used")
    shots.take("billing-ceiling-reached")
    page.get_by_role("button", name="Sign out").click()

    admin = make_member(role="admin")
    sign_in(page, live_server, admin.email, "/console/billing/accounts")
    page.get_by_role("link", name=dev.email).click()
    page.get_by_label("Enterprise terms (custom key limits, no spend ceiling, invoiced)").check()
    page.get_by_label("The agreement allows caching or storing data for the term").check()
    page.get_by_label("Term ends (YYYY-MM-DD)").fill("2027-12-31")
    page.get_by_label("Agreement reference").fill("MSA-2026-7")
    with page.expect_navigation():
        page.get_by_role("button", name="Save terms").click()
    expect(page.locator(".flash")).to_contain_text("Enterprise terms saved")
    row = page.get_by_role("row").filter(has_text=key.name)
    row.get_by_label("Per minute").fill("2400")
    row.get_by_label("Per second").fill("40")
    with page.expect_navigation():
        row.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("apply from its next request")
    to_docs(shots.take("admin-enterprise-terms"), "billing-admin.png")
    served = requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30)
    assert served.status_code == 200 and served.headers["RateLimit-Limit"] == "2400"
    page.goto(live_server(f"/console/api-keys/{key.id}"))
    expect(page.locator("#data-use")).to_contain_text("caching or storing data is allowed until 2027-12-31")
    expect(page.locator("#key-limits")).to_contain_text("40 per second, 2,400 per minute (enterprise terms)")
    shots.take("key-enterprise-terms")
    assert page.problems.messages == [], page.problems.messages


def test_the_monthly_statement_and_its_csv(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    key, _ = make_key(owner=dev, funded=False, name="Label site")
    adjust(account_for(dev), Decimal("100"), "opening credits")
    yesterday = utc_day() - timedelta(days=1)
    opened_on(dev, yesterday)
    db.session.add(ApiUsage(key_id=key.id, day=yesterday, count=1_001))
    db.session.commit()
    post_usage(through=utc_day(), since=yesterday)
    db.session.commit()
    month = utc_day().strftime("%Y-%m")
    sign_in(page, live_server, dev.email)
    page.get_by_role("link", name=month, exact=True).click()
    expect(page.get_by_role("heading", name=f"Statement for {month}")).to_be_visible()
    expect(page.locator("table.usage-key caption")).to_contain_text("Label site")
    expect(page.locator("table.usage-key")).to_contain_text("1,001")
    expect(page.locator("#summary")).to_contain_text("Opening balance")
    # 1,001 calls at 0.025 = 25.025, rounded once half up: 25.03; the opening credits of 100 were posted
    # this month (or, on the 1st, the previous month's last day's calls are on this statement).
    expect(page.locator("main")).to_contain_text("equals the closing balance, to the cent")
    to_docs(shots.take("statement"), "billing-statement.png")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert text.startswith("section,posted_at,kind") and "-25.03" in text and "closing balance" in text
    assert download.value.suggested_filename == f"credits-id-statement-{month}.csv"
    assert page.problems.messages == [], page.problems.messages
