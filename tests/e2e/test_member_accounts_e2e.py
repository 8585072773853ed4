"""The member-account pages in a real browser, found by what a person sees: forgot password (the
link followed from the mail the SMTP test server received), an authenticator app asked after the
password, and "Not you?" on the consent page keeping the app's request. No page may need an
inline script (the browser reports CSP violations as errors)."""

from __future__ import annotations

import re

import pyotp

from tests.e2e.helpers import authorize_url
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import RelyingParty

NEW = "a new passphrase for the browser"


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def sign_in(page, email: str, password: str) -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()


def test_forgot_password_then_an_authenticator_app(live_server, page, shots, mailbox):
    member = make_member(name="Robin Reset")
    page.goto(live_server("/login"))
    page.get_by_role("link", name="Forgot password?").click()
    page.get_by_label("Email").fill(member.email)
    shots.take("forgot")
    page.get_by_role("button", name="Send me a link").click()
    page.get_by_role("heading", name="Check your email").wait_for()
    shots.take("check-your-email")

    page.goto(mailbox.wait_for(member.email).link())
    page.get_by_label("New password", exact=True).fill(NEW)
    page.get_by_label("New password again").fill(NEW)
    shots.take("choose-new-password")
    page.get_by_role("button", name="Set the new password").click()
    page.wait_for_url("**/login")
    assert "Sign in with your new password" in page.locator(".flash").inner_text()

    page.goto(live_server("/login?next=/account"))
    sign_in(page, member.email, NEW)
    page.wait_for_url("**/account")
    page.get_by_role("link", name="Set up an authenticator app").click()
    page.get_by_text("Can’t scan it?").click()  # the key under the QR code, for typing it in
    secret = page.locator("#totp-secret").inner_text().replace(" ", "")
    page.get_by_label("Code from the app").fill(pyotp.TOTP(secret).now())
    page.get_by_label("Your password").fill(NEW)
    shots.take("set-up-authenticator")
    page.get_by_role("button", name="Turn on two-step verification").click()
    page.get_by_role("heading", name="Two-step verification is on").wait_for()
    codes = page.locator("#recovery-codes li").all_inner_texts()
    assert len(codes) == 10 and all(re.fullmatch(r"[a-z0-9]{4}(-[a-z0-9]{4}){3}", c) for c in codes)
    shots.take("recovery-codes")
    page.get_by_role("link", name="Download .txt").click()  # "I have saved them" waits for a copy kept
    page.get_by_role("link", name="I have saved them").click()
    page.get_by_role("button", name="Sign out of this browser").click()
    page.wait_for_url("**/login")

    sign_in(page, member.email, NEW)
    page.get_by_role("heading", name="Two-step verification").wait_for()
    shots.take("second-step")
    page.get_by_label("Code").fill(codes[0])
    with page.expect_navigation():
        page.get_by_role("button", name="Verify").click()
    assert "You are signed in" in page.locator("main").inner_text()
    assert "9 left" in page.locator(".flash").inner_text()
    no_page_problems(page)


def test_not_you_on_the_consent_page(live_server, callback, page, shots):
    first, second = make_member(name="Ann First"), make_member(name="Ben Second")
    client, secret = make_client(redirect_uris=[callback.url])
    rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
    url, params = authorize_url(live_server.url, rp, "openid profile")
    page.goto(url)
    sign_in(page, first.email, PASSWORD)
    page.wait_for_url("**/consent?**")
    assert "Signed in as Ann First" in page.locator(".who").inner_text()
    shots.take("consent-as-first")
    page.get_by_role("button", name="Not you? Use another account").click()
    page.wait_for_url("**/login?interaction=**")
    shots.take("login-for-another-account")
    sign_in(page, second.email, PASSWORD)
    page.wait_for_url("**/consent?**")
    assert "Signed in as Ben Second" in page.locator(".who").inner_text()
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    assert callback.last()["state"] == params["state"]
    no_page_problems(page)
