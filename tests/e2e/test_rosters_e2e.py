"""In a real browser: a manager (a plain member) keeps a roster on the account page - makes it,
searches the catalog by name, adds and takes off profiles - creates a workspace key, copies it with
the copy button, uses it, rotates it and revokes it after their confirmation pages; and the same
flow with JavaScript turned off. Strict CSP: no console error. Screenshots under artifacts/e2e/."""

from __future__ import annotations

import requests

from tests.api_support import make_catalog
from tests.e2e.conftest import ARTIFACTS, Shots
from tests.factories import PASSWORD, make_member

CLIPBOARD = ["clipboard-read", "clipboard-write"]


def sign_in(page, live_server, email: str) -> None:
    page.goto(live_server("/login?next=/account"))
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/account")


def reads(live_server, value: str, path: str) -> int:
    return requests.get(live_server(path), headers={"x-api-key": value}, timeout=30).status_code


def test_a_manager_keeps_a_roster_and_its_workspace_key(live_server, context, page, shots):
    from playwright.sync_api import expect

    catalog = make_catalog(credits=6)
    context.grant_permissions(CLIPBOARD, origin=live_server.url)
    manager = make_member(name="Mona Manager")
    sign_in(page, live_server, manager.email)
    section = page.locator("#rosters")
    expect(section).to_contain_text("You keep no roster yet.")
    page.get_by_label("Name of a new roster").fill("Our artists")
    shots.take("account-rosters")
    with page.expect_navigation():
        page.get_by_role("button", name="Make the roster").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Roster: Our artists")

    # Find two profiles by name and add them; take one off again.
    for typed, name in (("ada", "Ada Mine"), ("OTTO", "Otto Other")):
        page.get_by_label("Search the catalog by name").fill(typed)
        with page.expect_navigation():
            page.get_by_role("button", name="Search").click()
        with page.expect_navigation():
            page.get_by_role("button", name=f"Add {name}").click()
        expect(page.locator(".flash")).to_have_text(f"{name} is on Our artists.")
    shots.take("roster-two-profiles")
    listed = page.locator("ul.roster-profiles > li")
    expect(listed).to_have_count(2)
    expect(listed.first).to_contain_text("Ada Mine")
    with page.expect_navigation():
        page.get_by_role("button", name="Take off Otto Other").click()
    expect(listed).to_have_count(1)

    # A workspace key: shown once, copied with the button, used.
    page.get_by_label("Name of a new workspace key").fill("Royalty dashboard")
    with page.expect_navigation():
        page.get_by_role("button", name="Create a workspace key").click()
    value = page.locator("#api-key").inner_text().strip()
    assert value.startswith("mwk_") and len(value) == 47
    shots.take("workspace-key-shown-once")
    page.locator("button[data-copy=api-key]").click()
    assert page.evaluate("navigator.clipboard.readText()") == value
    assert reads(live_server, value, f"/v1/profile/{catalog.mine}/credits") == 200
    assert reads(live_server, value, f"/v1/profile/{catalog.other}") == 403  # taken off: out of reach
    page.get_by_role("link", name="I have copied it").click()
    row = page.locator("table.workspace-keys tbody tr")
    expect(row).to_contain_text("Royalty dashboard")
    expect(row).to_contain_text(value[:12])
    expect(page.locator("body")).not_to_contain_text(value)
    shots.take("roster-with-key")

    # Rotate after its confirmation page: the old value stops at once.
    page.get_by_role("link", name="Rotate Royalty dashboard").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Rotate the workspace key Royalty dashboard?")
    page.get_by_label("stops working at once (after a leak)").check()
    shots.take("rotate-confirm")
    assert reads(live_server, value, f"/v1/profile/{catalog.mine}") == 200  # nothing happened yet
    with page.expect_navigation():
        page.get_by_role("button", name="Rotate Royalty dashboard").click()
    new_value = page.locator("#api-key").inner_text().strip()
    assert new_value != value and new_value.startswith("mwk_")
    assert reads(live_server, value, f"/v1/profile/{catalog.mine}") == 401
    assert reads(live_server, new_value, f"/v1/profile/{catalog.mine}") == 200

    # Revoke after its confirmation page.
    page.get_by_role("link", name="I have copied it").click()
    page.get_by_role("link", name="Revoke Royalty dashboard").click()
    shots.take("revoke-confirm")
    with page.expect_navigation():
        page.get_by_role("button", name="Revoke Royalty dashboard").click()
    expect(page.locator(".flash")).to_have_text(
        "Royalty dashboard is revoked: requests with it are refused from now on."
    )
    expect(row).to_contain_text("revoked")
    assert reads(live_server, new_value, f"/v1/profile/{catalog.mine}") == 401
    shots.take("key-revoked")
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def test_the_roster_pages_work_without_javascript(live_server, chromium, request):
    """Every step is a plain link or form: with JavaScript off the same flow goes through."""
    from playwright.sync_api import expect

    catalog = make_catalog(credits=3)
    manager = make_member()
    context = chromium.new_context(java_script_enabled=False, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_in(page, live_server, manager.email)
        page.get_by_label("Name of a new roster").fill("Writers")
        page.get_by_role("button", name="Make the roster").click()
        page.get_by_label("Search the catalog by name").fill("ada")
        page.get_by_role("button", name="Search").click()
        page.get_by_role("button", name="Add Ada Mine").click()
        expect(page.locator("ul.roster-profiles")).to_contain_text("Ada Mine")
        page.get_by_label("Name of a new workspace key").fill("Script")
        page.get_by_role("button", name="Create a workspace key").click()
        value = page.locator("#api-key").inner_text().strip()
        expect(page.locator("button[data-copy=api-key]")).to_be_hidden()  # the copy button needs script
        Shots(page, ARTIFACTS / request.node.name).take("key-shown-once-390px")
        assert reads(live_server, value, f"/v1/profile/{catalog.mine}") == 200
        page.get_by_role("link", name="I have copied it").click()
        page.get_by_role("link", name="Revoke Script").click()
        page.get_by_role("button", name="Revoke Script").click()
        expect(page.locator(".flash")).to_contain_text("Script is revoked")
        assert reads(live_server, value, f"/v1/profile/{catalog.mine}") == 401
    finally:
        context.close()
