"""A public app in development registers `http://localhost:<port>/callback` (issue 50, item 16),
in a real browser: the console takes it for a public app, and a sign-in through it lands on that
exact address with a code the app redeems with its PKCE verifier (no secret)."""

from __future__ import annotations

from tests.e2e.helpers import authorize_url
from tests.e2e.test_console_pages_e2e import open_console
from tests.factories import PASSWORD, make_member
from tests.flows import RelyingParty


def test_a_public_app_signs_in_through_a_localhost_dev_redirect(live_server, callback, page, shots):
    from playwright.sync_api import expect

    dev = make_member(role="developer")
    redirect = f"http://localhost:{callback.port}/callback"
    open_console(page, live_server, dev.email, "/console/apps/new")
    page.get_by_label("Name", exact=True).fill("SPA in development")
    page.get_by_label("Redirect URIs (one per line)").fill(redirect)
    page.get_by_label("Public — a native or browser app, no secret (PKCE protects it)").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Register (").click()
    expect(page.locator("dl.facts").first).to_contain_text(redirect)
    client_id = page.locator("#client-id").inner_text().strip()
    shots.take("public-app-with-localhost")

    rp = RelyingParty(live_server.url, client_id, None, redirect_uri=redirect)
    url, params = authorize_url(live_server.url, rp, "openid profile")
    member = make_member()
    browser = page.context.browser.new_context()
    try:
        signin = browser.new_page()
        signin.goto(url)
        signin.get_by_label("Email").fill(member.email)
        signin.get_by_label("Password").fill(PASSWORD)
        signin.get_by_role("button", name="Sign in").click()
        signin.wait_for_url("**/consent?**")
        signin.get_by_role("button", name="Allow").click()
        signin.wait_for_url(f"{redirect}?**")
        assert signin.url.startswith(redirect + "?")
    finally:
        browser.close()
    answer = callback.last()
    assert answer["state"] == params["state"]
    tokens = rp.exchange(answer["code"]).json()
    assert "access_token" in tokens and "id_token" in tokens, tokens
