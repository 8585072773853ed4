"""The console as a new developer or admin meets it (issue 21, item 5), in a real browser: the
navigation marks where you are, dates read as words with the exact time at hand, the apps list
names owners and searches, deleting asks for the app's name, and a deleted app stays in sight
(and in the ledger) marked deleted. Every page passed is screenshotted under artifacts/e2e/."""

from __future__ import annotations

import os
import shutil

import pytest

from app.core.extensions import db
from app.models import Client
from tests.conftest import ROOT
from tests.e2e.test_account_console_e2e import no_page_problems, sign_in_on_login_page
from tests.factories import make_client, make_member
from tests.integration.conftest import restore_keys  # noqa: F401 - the key rows go back as they were

DOCS_IMG = ROOT / "docs" / "img"


def to_docs(shot, name: str) -> None:
    """UPDATE_DOCS_SCREENSHOTS=1 refreshes the README's console pictures from these tests."""
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMG / name)


def open_console(page, live_server, email: str, path: str = "/console") -> None:
    page.wait_for_load_state("networkidle")
    page.goto(live_server(path))
    page.wait_for_load_state("networkidle")  # leaving a page while its icon loads aborts the icon
    sign_in_on_login_page(page, email)
    page.wait_for_url(live_server(path))
    page.wait_for_load_state("networkidle")


def test_navigation_marks_the_current_page_and_dates_read_as_words(live_server, page, shots):
    from playwright.sync_api import expect

    admin = make_member(role="admin", email="ada.admin@example.com")
    dev = make_member(role="developer", email="devi@example.com")
    make_client(name="Liner Notes", owner_id=dev.id)
    make_client(name="Setlist", owner_id=admin.id)
    open_console(page, live_server, admin.email)
    nav = page.get_by_role("navigation", name="Console")
    expect(nav.locator('[aria-current="page"]')).to_have_text("Apps")
    table = page.locator("table.apps")
    expect(table.get_by_role("columnheader", name="Owner")).to_be_visible()
    expect(table).to_contain_text("devi@example.com")
    created = table.locator("time").first
    expect(created).to_have_text("just now")
    assert created.get_attribute("title").endswith(" UTC") and created.get_attribute("datetime")
    to_docs(shots.take("apps-list"), "console.png")

    page.get_by_label("Search").fill("LINER")
    with page.expect_navigation():
        page.get_by_role("button", name="Search").click()
    expect(table.get_by_role("link", name="Liner Notes")).to_be_visible()
    expect(table).not_to_contain_text("Setlist")
    shots.take("apps-search")

    for name in ("Fees", "Audit log", "Signing keys", "Members", "API keys"):
        nav.get_by_role("link", name=name).click()
        expect(nav.locator('[aria-current="page"]')).to_have_text(name)
        # a current link is drawn differently from the others, not only announced
        assert nav.locator('[aria-current="page"]').evaluate("e => getComputedStyle(e).fontWeight") == "700"
    shots.take("nav-on-api-keys")
    no_page_problems(page)


def test_delete_asks_for_the_name_and_the_app_stays_listed_as_deleted(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    client, _ = make_client(name="Liner Notes", owner_id=dev.id)
    open_console(page, live_server, dev.email, f"/console/apps/{client.client_id}")
    page.get_by_role("link", name="Delete app…").click()
    expect(page.get_by_role("heading", name="Delete Liner Notes?")).to_be_visible()
    shots.take("delete-confirm")

    page.get_by_label("Type the app's name to confirm").fill("Liner")
    with page.expect_navigation():
        page.get_by_role("button", name="Delete Liner Notes").click()
    field = page.get_by_label("Type the app's name to confirm")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(page.locator("main")).to_contain_text("Type Liner Notes exactly to delete it; nothing was deleted.")
    shots.take("delete-wrong-name")
    db.session.remove()
    assert not db.session.get(Client, client.id).is_deleted

    field.fill("Liner Notes")
    with page.expect_navigation():
        page.get_by_role("button", name="Delete Liner Notes").click()
    assert page.url == live_server("/console")
    row = page.locator("table.apps tr", has=page.get_by_role("link", name="Liner Notes"))
    expect(row).to_contain_text("deleted")
    expect(row).to_contain_text("charged through")
    shots.take("apps-with-deleted")

    row.get_by_role("link", name="Liner Notes").click()
    expect(page.locator("#deleted-note")).to_contain_text("This app was deleted just now")
    expect(page.get_by_role("link", name="Edit", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Disable app")).to_have_count(0)
    shots.take("deleted-app")

    page.get_by_role("navigation", name="Console").get_by_role("link", name="Fees").click()
    ledger = page.locator("table.ledger")
    expect(ledger.locator("tr.deleted")).to_contain_text("Liner Notes")
    shots.take("ledger-with-deleted")
    no_page_problems(page)


def test_audit_log_filters_by_part_of_a_name_event_type_and_day(live_server, page, shots):
    from datetime import timedelta

    from playwright.sync_api import expect

    from app.models import AuditEvent
    from app.models.base import utcnow

    admin = make_member(role="admin")
    member = make_member(email="billie.basic@example.com")
    liner, _ = make_client(name="Liner Notes")
    setlist, _ = make_client(name="Setlist")
    now = utcnow()
    db.session.add_all(
        [
            AuditEvent(
                action="consent.granted",
                actor_id=member.id,
                actor_email=member.email,
                client_id=liner.id,
                # a second apart, a day ago (the filter below spans every UTC day they fall on)
                created_at=now - timedelta(days=1, seconds=i),
            )
            for i in range(60)
        ]
        + [
            AuditEvent(
                action="signin.ok",
                actor_id=member.id,
                actor_email=member.email,
                client_id=setlist.id,
                created_at=now - timedelta(days=9),
            )
        ]
    )
    db.session.commit()
    open_console(page, live_server, admin.email, "/console/audit")
    page.get_by_label("App (name or client id)").fill("liner")
    page.get_by_label("Member (email, or part of it)").fill("billie")
    page.get_by_label("Event").select_option(label="Consent granted")
    # The 60 events span an hour: two UTC days when the test runs just after midnight.
    page.get_by_label("From (UTC day)").fill((now - timedelta(days=1, minutes=59)).date().isoformat())
    page.get_by_label("To", exact=True).fill((now - timedelta(days=1)).date().isoformat())
    with page.expect_navigation():
        page.get_by_role("button", name="Filter").click()
    rows = page.locator("table.audit tbody tr")
    expect(rows).to_have_count(50)
    expect(page.locator("table.audit")).not_to_contain_text("Setlist")
    expect(rows.first.locator("time")).to_have_text("yesterday")
    shots.take("audit-filtered")
    page.get_by_role("link", name="Older →").click()
    expect(rows).to_have_count(10)
    expect(page.get_by_label("Event")).to_have_value("consent.granted")  # the filters stay set on the next page
    expect(page.get_by_label("App (name or client id)")).to_have_value("liner")
    shots.take("audit-filtered-page-2")

    page.get_by_label("From (UTC day)").fill((now + timedelta(days=3)).date().isoformat())
    with page.expect_navigation():
        page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("alert")).to_have_text("The range starts after it ends.")
    shots.take("audit-bad-range")
    no_page_problems(page)


def test_register_shows_the_fee_and_every_problem_on_its_field(live_server, callback, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    open_console(page, live_server, dev.email, "/console/apps/new")
    expect(page.locator("#fee-note")).to_contain_text("Fee: 99 USD per month")
    register = page.get_by_role("button", name="Register (99 USD per month)")
    expect(register).to_be_visible()
    page.get_by_label("Redirect URIs (one per line)").fill("http://example.com/cb")
    page.get_by_label("Logo URL").fill("ftp://logo.example/x.png")
    with page.expect_navigation():
        register.click()
    summary = page.get_by_role("alert")
    expect(summary.get_by_role("listitem")).to_have_count(3)  # name, redirect URI and logo, in one go
    for label in ("Name", "Redirect URIs (one per line)", "Logo URL"):
        expect(page.get_by_label(label, exact=True)).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#logo_url-error-1")).to_contain_text("must be an absolute https:// URL")
    shots.take("register-errors")
    summary.get_by_role("link", name="must use https").click()  # the summary leads to the field
    assert page.evaluate("location.hash") == "#redirect_uris"

    page.get_by_label("Name", exact=True).fill("Session Notes")
    page.get_by_label("Redirect URIs (one per line)").fill(callback.url)
    page.get_by_label("Logo URL").fill("")
    with page.expect_navigation():
        page.get_by_role("button", name="Register (99 USD per month)").click()
    expect(page.locator("#registered-note")).to_contain_text("99 USD is charged for")
    shots.take("registered-with-fee")
    no_page_problems(page)


@pytest.mark.usefixtures("restore_keys")
def test_rotate_and_retire_keys_ask_for_confirmation(live_server, page, shots):
    from playwright.sync_api import expect

    from app.protocol.jwks import keystore

    admin = make_member(role="admin")
    old = keystore.snapshot().signing_kid
    keystore.generate()
    db.session.commit()
    open_console(page, live_server, admin.email, "/console/keys")
    created = page.locator("table.keys time").first  # dates in words, the exact time in the title
    assert created.get_attribute("title").endswith(" UTC") and created.get_attribute("datetime")
    page.get_by_role("link", name=f"Retire… key {old}").click()
    expect(page.get_by_role("heading", name=f"Retire key {old}?")).to_be_visible()
    shots.take("retire-confirm")
    page.get_by_role("link", name="Cancel").click()
    assert page.url == live_server("/console/keys")
    page.get_by_role("link", name=f"Retire… key {old}").click()
    with page.expect_navigation():
        page.get_by_role("button", name=f"Retire {old}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Key {old} no longer signs")

    page.get_by_role("link", name="Rotate now…").click()
    expect(page.get_by_role("heading", name="Rotate the signing key?")).to_be_visible()
    shots.take("rotate-confirm")
    with page.expect_navigation():
        page.get_by_role("button", name="Rotate now").click()
    expect(page.get_by_role("status")).to_contain_text("is published and signs from")
    expect(page.locator("#pending-note")).to_be_visible()
    shots.take("keys-after-rotation")
    no_page_problems(page)


def test_activity_pictures_on_the_app_page_and_for_admins(live_server, page, shots):
    """Issue 21, item 6: sign-ins, consents and active members per day, as server-drawn SVG that
    the strict CSP lets through, with the numbers as a table too."""
    from datetime import timedelta

    from playwright.sync_api import expect

    from app.models import AuditEvent
    from app.models.base import utcnow

    admin = make_member(role="admin")
    dev = make_member(role="developer")
    members = [make_member() for _ in range(3)]
    client, _ = make_client(name="Liner Notes", owner_id=dev.id)
    now = utcnow()
    for day in range(30):
        for m in members[: 1 + day % 3]:
            db.session.add(
                AuditEvent(action="signin.ok", actor_id=m.id, client_id=client.id, created_at=now - timedelta(days=day))
            )
        if day % 5 == 0:
            db.session.add(
                AuditEvent(
                    action="consent.granted",
                    actor_id=members[0].id,
                    client_id=client.id,
                    created_at=now - timedelta(days=day),
                )
            )
    db.session.commit()

    open_console(page, live_server, dev.email, f"/console/apps/{client.client_id}")
    panel = page.get_by_role("region", name="Activity, last 30 days")
    expect(panel.get_by_role("img")).to_have_count(3)
    signins = panel.get_by_role("img", name="Sign-ins")
    expect(signins.locator("rect.bar")).to_have_count(30)
    assert signins.bounding_box()["height"] > 100  # drawn, not collapsed
    bar_fill = signins.locator("rect.bar").first.evaluate("e => getComputedStyle(e).fill")
    assert bar_fill not in ("none", "rgb(0, 0, 0)"), bar_fill  # coloured by style.css, not an inline style
    expect(page.locator("#app-signins figcaption")).to_contain_text("60 in 30 days")
    expect(page.locator("#app-members figcaption")).to_contain_text("at most 3 a day")
    expect(page.locator("#app-consents figcaption")).to_contain_text("6 in 30 days")
    panel.locator("#app-consents summary").click()
    expect(panel.locator("#app-consents table tbody tr")).to_have_count(30)
    panel.locator("#app-signins").scroll_into_view_if_needed()
    shots.take("app-activity")
    no_page_problems(page)
    assert page.context.request.get(live_server("/console/activity")).status == 403  # admins only

    page.wait_for_load_state("networkidle")  # leaving while the icon still loads would abort it
    with page.expect_navigation():
        page.get_by_role("button", name="Sign out").click()
    open_console(page, live_server, admin.email, "/console/activity")
    expect(page.get_by_role("navigation", name="Console").locator('[aria-current="page"]')).to_have_text("Activity")
    expect(page.get_by_role("heading", name="Activity across the provider")).to_be_visible()
    expect(page.get_by_role("img", name="Active members")).to_be_visible()
    expect(page.get_by_role("link", name="Liner Notes")).to_be_visible()
    to_docs(shots.take("provider-activity"), "console-activity.png")
    no_page_problems(page)


def test_a_rotated_secret_says_in_words_how_long_the_old_one_works(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    client, _ = make_client(name="Liner Notes", owner_id=dev.id)
    open_console(page, live_server, dev.email, f"/console/apps/{client.client_id}")
    page.get_by_label("Keep the old secret working for").select_option(label="24 hours")
    with page.expect_navigation():
        page.get_by_role("button", name="Rotate secret").click()
    expect(page.get_by_role("heading", name="New secret for Liner Notes")).to_be_visible()
    expect(page.locator("main")).to_contain_text("(in 1 day)")
    shots.take("rotated-secret")
    no_page_problems(page)


def test_an_api_key_problem_is_shown_on_its_field(live_server, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    open_console(page, live_server, dev.email, "/console/api-keys")
    page.get_by_label("Name", exact=True).fill("Shop widget")
    page.get_by_label("Publishable (mpk_)", exact=False).check()
    with page.expect_navigation():
        page.get_by_role("button", name="Create key").click()
    domains = page.get_by_label("Domains (publishable keys; one per line)")
    expect(domains).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#domains-error-1")).to_have_text("A publishable key needs at least one domain.")
    page.get_by_role("alert").get_by_role("link").click()
    assert page.evaluate("location.hash") == "#domains"
    shots.take("api-key-field-error")
    no_page_problems(page)
