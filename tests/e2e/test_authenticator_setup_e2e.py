"""Setting up an authenticator app in a real browser, on a desktop and a 390x844 phone: a QR code
drawn on the server (inline SVG: no script, no image request, the CSP unchanged) that encodes the
otpauth:// link, the key grouped in fours with a copy button under "Can't scan it?", and the
setup finished with a code from the key."""

from __future__ import annotations

import os
import shutil

import pyotp

from app.web.qr_code import qr_svg
from tests.e2e.conftest import ARTIFACTS, ROOT, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member

CLIPBOARD = ["clipboard-read", "clipboard-write"]
DOCS_SCREENSHOT = ROOT / "docs" / "img" / "authenticator-setup.png"


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def open_setup(page, base: str, email: str) -> None:
    page.goto(f"{base}/login?next=/account/two-step/setup")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("heading", name="Set up an authenticator app").wait_for()


def test_the_qr_code_and_the_key_to_copy(live_server, context, page, shots):
    from playwright.sync_api import expect

    context.grant_permissions(CLIPBOARD, origin=live_server.url)
    member = make_member(name="Quinn Qr")
    open_setup(page, live_server.url, member.email)

    qr = page.get_by_role("img", name="QR code to add Credits ID to your authenticator app")
    expect(qr).to_be_visible()
    box = qr.bounding_box()
    assert box["width"] >= 200 and abs(box["width"] - box["height"]) < 1, box  # square and big enough to scan
    # What it encodes: the same drawing as the otpauth:// link the page offers to open.
    uri = page.get_by_role("link", name="Open the setup link").get_attribute("href")
    secret = pyotp.parse_uri(uri).secret
    assert uri.startswith("otpauth://totp/Credits%20ID:") and "issuer=Credits%20ID" in uri
    drawn = page.locator("svg.qr path.qrline").get_attribute("d")
    expected = str(qr_svg(uri, "QR code to add Credits ID to your authenticator app"))
    assert f'd="{drawn}"' in expected and len(drawn) > 500
    assert page.locator("img").count() == 0  # nothing fetched: the drawing is in the page
    shots.take("setup-qr")
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        shutil.copyfile(shots.folder / "01-setup-qr.png", DOCS_SCREENSHOT)

    # Can't scan it: the key, in groups of four, copied without the spaces.
    key = page.locator("#totp-secret")
    expect(key).to_be_hidden()
    page.get_by_text("Can’t scan it?").click()
    expect(key).to_be_visible()
    groups = key.inner_text().split(" ")
    assert all(len(g) == 4 for g in groups[:-1]) and "".join(groups) == secret
    page.get_by_role("button", name="Copy key").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shots.take("cant-scan-key-copied")

    page.get_by_label("Code from the app").fill(pyotp.TOTP(secret).now())
    page.get_by_label("Your password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Turn on two-step verification").click()
    page.get_by_role("heading", name="Two-step verification is on").wait_for()
    no_page_problems(page)


def test_the_setup_page_fits_a_phone(live_server, chromium):
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.set_default_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.problems = PageProblems(page)
        shots = Shots(page, ARTIFACTS / "test_the_setup_page_fits_a_phone")
        open_setup(page, live_server.url, make_member().email)
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        box = page.locator("svg.qr").bounding_box()
        assert 200 <= box["width"] <= 358, box
        page.get_by_text("Can’t scan it?").click()
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        shots.take("phone-setup")
        no_page_problems(page)
    finally:
        phone.close()
