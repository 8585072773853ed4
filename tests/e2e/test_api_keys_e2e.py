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


def test_revoke_asks_first_on_a_page_naming_the_key(live_server, page, shots):
    """ "Revoke key" is a link to a confirmation page naming the key (its name and visible start);
    Cancel leaves the key working, the page's own button revokes it. No script involved."""
    from playwright.sync_api import expect

    from tests.key_support import make_key

    dev = make_member(role="developer")
    key, value = make_key(owner=dev, name="Billing server")
    page.goto(live_server(f"/login?next=/console/api-keys/{key.id}"))
    page.get_by_label("Email").fill(dev.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/console/api-keys/{key.id}")

    page.get_by_role("link", name="Revoke key…").click()
    expect(page.get_by_role("heading", name="Revoke Billing server?")).to_be_visible()
    expect(page.locator("main")).to_contain_text(f"{key.prefix}…")
    shots.take("revoke-confirm")
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"**/console/api-keys/{key.id}")
    assert requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30).status_code == 200

    page.get_by_role("link", name="Revoke key…").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Revoke Billing server").click()
    expect(page.locator(".flash").first).to_contain_text("Billing server is revoked")
    expect(page.get_by_role("link", name="Revoke key…")).to_have_count(0)
    shots.take("revoked")
    assert requests.get(live_server("/v1/roles"), headers={"x-api-key": value}, timeout=30).status_code == 401
    assert page.problems.messages == [], page.problems.messages


def test_a_publishable_keys_name_and_domains_are_edited_with_a_wildcard(live_server, page, shots):
    """Issue 50, item 16: "Edit name and domains" on a key's page; `*.shop.example` lets every
    subdomain's pages use the key (the bare domain only when listed), the value stays the same."""
    from playwright.sync_api import expect

    from tests.api_support import make_catalog
    from tests.key_support import make_key

    catalog = make_catalog(credits=2)
    dev = make_member(role="developer")
    key, value = make_key("publishable", domains=["shop.example"], owner=dev, name="Shop widget")

    def from_page(origin: str) -> int:
        return requests.get(
            live_server(f"/embed/v1/cards?ids={catalog.mine}"),
            headers={"x-api-key": value, "Origin": origin},
            timeout=30,
        ).status_code

    assert from_page("https://eu.shop.example") == 403
    page.goto(live_server(f"/login?next=/console/api-keys/{key.id}"))
    page.get_by_label("Email").fill(dev.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/console/api-keys/{key.id}")
    page.get_by_role("link", name="Edit name and domains").click()
    page.get_by_label("Name").fill("Storefront widget")
    page.get_by_label("Domains (one per line)").fill("*.com")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".field.has-error")).to_contain_text("two labels")
    shots.take("edit-key-refused")
    page.get_by_label("Domains (one per line)").fill("shop.example\n*.shop.example")
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Storefront widget")
    expect(page.locator("dl.facts")).to_contain_text("*.shop.example")
    shots.take("edit-key-saved")
    assert from_page("https://eu.shop.example") == 200 and from_page("https://shop.example") == 200
    assert from_page("https://evilshop.example") == 403 and from_page("https://shop.example.evil.net") == 403
    assert page.problems.messages == [], page.problems.messages
