"""In a real browser (the shared Debian Chromium of tests/e2e/conftest.py): the secret page's copy
button works under the strict CSP (script loaded from a file, no inline script) and puts the
secret on the clipboard. Every page passed is screenshotted under artifacts/e2e/."""

from __future__ import annotations

from tests.factories import PASSWORD, make_member

CLIPBOARD = ["clipboard-read", "clipboard-write"]


def test_copy_button_copies_the_secret(live_server, context, page, shots):
    from playwright.sync_api import expect

    # This test's own context (from the shared browser) may read and write the clipboard.
    context.grant_permissions(CLIPBOARD, origin=live_server.url)
    dev = make_member(role="developer")
    page.goto(live_server("/login?next=/console/apps/new"))
    page.get_by_label("Email").fill(dev.email)
    page.get_by_label("Password").fill(PASSWORD)
    shots.take("login")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/apps/new")
    page.get_by_label("Name", exact=True).fill("Clipboard App")
    page.get_by_label("Redirect URIs (one per line)").fill("https://clip.example.com/cb")
    shots.take("register-form")
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Register").click()
    csp = navigation.value.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "unsafe-inline" not in csp

    secret = page.locator("#client-secret").inner_text().strip()
    assert len(secret) >= 32
    button = page.locator("button[data-copy=client-secret]")
    expect(button).to_be_visible()  # hidden until the script (a file, not inline) runs
    shots.take("secret-page")
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    expect(page.get_by_role("status")).to_have_text("Copied to the clipboard.")
    shots.take("copied")
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"
