"""In a real browser (Chromium through Playwright): the secret page's copy button works under the
strict CSP (script loaded from a file, no inline script) and puts the secret on the clipboard."""

import shutil

import pytest

from tests.factories import PASSWORD, make_member

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def page(live_server):
    if not shutil.which(CHROMIUM):
        pytest.skip("no Chromium on this machine")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        page = context.new_page()
        page.set_default_timeout(60_000)  # a loaded machine
        page.csp_violations = []
        page.on("console", lambda m: "Content Security Policy" in m.text and page.csp_violations.append(m.text))
        yield page
        browser.close()


def test_copy_button_copies_the_secret(live_server, page):
    dev = make_member(role="developer")
    page.goto(live_server("/login?next=/console/apps/new"))
    page.fill("#email", dev.email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/console/apps/new")
    page.fill("#name", "Clipboard App")
    page.fill("#redirect_uris", "https://clip.example.com/cb")
    page.click("form.app-form button[type=submit]")

    secret = page.inner_text("#client-secret").strip()
    button = page.locator("button[data-copy=client-secret]")
    sync_api.expect(button).to_be_visible()  # hidden until the script runs
    button.click()
    sync_api.expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    assert page.inner_text("#copy-status") == "Copied to the clipboard."
    assert page.csp_violations == []
