""" "Forgot password?" started from an app's sign-in, in a real browser on a 390x844 phone: the
forgot page says where the member goes on to, and after the new password (the link followed from
the mail the SMTP test server received) the login page goes on with the app's pending sign-in -
consent, then the app's callback with its own state."""

from __future__ import annotations

from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.e2e.helpers import authorize_url
from tests.factories import make_client, make_member
from tests.flows import RelyingParty

NEW = "marigold lantern orbit seventeen"


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def test_a_reset_started_from_an_app_goes_on_to_the_app(live_server, callback, chromium, mailbox):
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.set_default_timeout(TIMEOUT_MS)
    phone.set_default_navigation_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.problems = PageProblems(page)
        shots = Shots(page, ARTIFACTS / "test_a_reset_started_from_an_app_goes_on_to_the_app")
        member = make_member(name="Frankie Forgot")
        client, secret = make_client(redirect_uris=[callback.url], name="Liner Notes")
        rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
        url, params = authorize_url(live_server.url, rp, "openid profile")
        page.goto(url)
        page.get_by_role("link", name="Forgot password?").click()
        page.get_by_role("heading", name="Reset your password").wait_for()
        assert "Then you go on signing in to Liner Notes" in page.locator("main").inner_text()
        page.get_by_label("Email").fill(member.email)
        shots.take("forgot-from-app")
        page.get_by_role("button", name="Send me a link").click()
        page.get_by_role("heading", name="Check your email").wait_for()
        assert page.get_by_role("link", name="Back to sign in to Liner Notes").is_visible()
        shots.take("check-your-email")

        page.goto(mailbox.wait_for(member.email).link())
        page.get_by_label("New password", exact=True).fill(NEW)
        page.get_by_label("New password again").fill(NEW)
        with page.expect_navigation():
            page.get_by_role("button", name="Set the new password").click()
        page.wait_for_url("**/login?interaction=**")
        assert "Sign in with your new password to continue to Liner Notes" in page.locator(".flash").inner_text()
        assert "to continue to Liner Notes" in page.locator(".lead").inner_text()
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        shots.take("login-continues-to-app")

        page.get_by_label("Email").fill(member.email)
        page.get_by_label("Password", exact=True).fill(NEW)
        with page.expect_navigation():
            page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url("**/consent?**")
        page.get_by_role("button", name="Allow").click()
        page.wait_for_url(callback.url + "*")
        assert callback.last()["state"] == params["state"] and "code" in callback.last()
        no_page_problems(page)
    finally:
        phone.close()
