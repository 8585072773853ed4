"""In a real browser: a developer creates an API key on the console, copies it with the copy button
(strict CSP, no inline script), uses it, and sees the request on the key's page. Screenshots under
artifacts/e2e/."""

from __future__ import annotations

import requests

from tests.factories import PASSWORD, make_member
from tests.key_support import fund

CLIPBOARD = ["clipboard-read", "clipboard-write"]


def test_create_copy_use_and_see_usage(live_server, context, page, shots):
    from playwright.sync_api import expect

    context.grant_permissions(CLIPBOARD, origin=live_server.url)
    dev = make_member(role="developer")
    fund(dev)  # a key is served while its owner's account has credits (docs/billing.md)
    page.goto(live_server("/login?next=/console/api-keys"))
    page.get_by_label("Email").fill(dev.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/api-keys")
    page.get_by_label("Name", exact=True).fill("Production server")
    page.get_by_label("Plan").select_option("start")
    shots.take("api-keys-empty")
    with page.expect_navigation():
        page.get_by_role("button", name="Create key").click()
    value = page.locator("#api-key").inner_text().strip()
    assert value.startswith("msk_")
    button = page.locator("button[data-copy=api-key]")
    expect(button).to_be_visible()
    shots.take("api-key-shown-once")
    button.click()
    assert page.evaluate("navigator.clipboard.readText()") == value

    assert requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30).status_code == 200
    page.get_by_role("link", name="I have copied it").click()
    expect(page.locator("table.usage")).to_contain_text("1")
    shots.take("api-key-detail")
    page.get_by_role("link", name="← API keys").click()
    expect(page.locator("table.api-keys")).to_contain_text("Production server")
    shots.take("api-keys-list")
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"
