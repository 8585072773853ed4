"""The recovery codes page in a real browser (a desktop and a 390x844 phone): Copy, Download .txt
and Print, and "I have saved them" held back until one of them was used; the download holds the
codes; a printout shows the codes alone. Without JavaScript the download link and the button
work as they are."""

from __future__ import annotations

import pyotp

from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member

CLIPBOARD = ["clipboard-read", "clipboard-write"]


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def turn_on_two_step(page, base: str, email: str) -> list[str]:
    page.goto(f"{base}/login?next=/account/two-step/setup")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    uri = page.get_by_role("link", name="Open the setup link").get_attribute("href")
    page.get_by_label("Code from the app").fill(pyotp.TOTP(pyotp.parse_uri(uri).secret).now())
    page.get_by_label("Your password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Turn on two-step verification").click()
    page.get_by_role("heading", name="Two-step verification is on").wait_for()
    return page.locator("#recovery-codes li").all_inner_texts()


def test_saved_them_waits_for_copy_and_the_download_holds_the_codes(live_server, context, page, shots, tmp_path):
    from playwright.sync_api import expect

    context.grant_permissions(CLIPBOARD, origin=live_server.url)
    member = make_member()
    codes = turn_on_two_step(page, live_server.url, member.email)
    done = page.locator("#saved-them")
    expect(done).to_have_attribute("aria-disabled", "true")
    assert done.get_attribute("href") is None  # neither a click nor Enter follows it
    expect(page.locator("#recovery-status")).to_have_text("Copy, download or print your codes first.")
    shots.take("codes-not-saved-yet")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download .txt").click()
    assert download.value.suggested_filename == "credits-id-recovery-codes.txt"
    saved = tmp_path / "codes.txt"
    download.value.save_as(saved)
    text = saved.read_text()
    assert member.email in text and all(code in text.splitlines() for code in codes)
    expect(done).not_to_have_attribute("aria-disabled", "true")
    expect(done).to_have_attribute("href", "/account")

    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()").split("\n") == codes
    shots.take("codes-copied")

    page.emulate_media(media="print")  # what a printout shows: the codes, no buttons or bars
    assert page.locator(".topbar").is_hidden() and page.locator(".recovery-actions").is_hidden()
    assert page.locator("#recovery-codes").is_visible()
    page.emulate_media(media="screen")
    with page.expect_navigation():
        done.click()
    page.get_by_role("heading", name="Your Credits ID account").wait_for()
    no_page_problems(page)


def test_print_on_a_phone_enables_saved_them(live_server, chromium):
    from playwright.sync_api import expect

    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.set_default_timeout(TIMEOUT_MS)
    phone.set_default_navigation_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.problems = PageProblems(page)
        shots = Shots(page, ARTIFACTS / "test_print_on_a_phone_enables_saved_them")
        turn_on_two_step(page, live_server.url, make_member().email)
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        expect(page.locator("#saved-them")).to_have_attribute("aria-disabled", "true")
        shots.take("phone-recovery-codes")
        # The browser's print dialog is the browser's own: count the call instead of opening it.
        page.evaluate("() => { window.printed = 0; window.print = () => { window.printed += 1; }; }")
        page.get_by_role("button", name="Print").click()
        assert page.evaluate("() => window.printed") == 1
        expect(page.get_by_role("link", name="I have saved them")).to_have_attribute("href", "/account")
        shots.take("phone-printed")
        no_page_problems(page)
    finally:
        phone.close()


def test_without_javascript_the_download_and_saved_them_work(live_server, chromium):
    context = chromium.new_context(viewport={"width": 1100, "height": 900}, java_script_enabled=False)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        member = make_member()
        # Without script the setup page still works (the code typed from the key, the link's secret).
        codes = turn_on_two_step(page, live_server.url, member.email)
        assert len(codes) == 10
        assert page.get_by_role("button", name="Copy").count() == 0  # hidden: it needs script
        href = page.get_by_role("link", name="Download .txt").get_attribute("href")
        assert href.startswith("data:text/plain;charset=utf-8,") and codes[0] in href
        page.get_by_role("link", name="I have saved them").click()
        page.get_by_role("heading", name="Your Credits ID account").wait_for()
    finally:
        context.close()
