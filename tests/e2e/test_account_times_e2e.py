"""The account page in a real browser on a 390x844 phone in Tokyo: moments in the member's own
time zone (UTC in their title), sessions named by browser and system with a device hint, and the
page fits the phone's width."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.1 Mobile/15E148 Safari/604.1"
)


def test_times_are_local_and_sessions_are_named_on_a_phone(live_server, chromium):
    phone = chromium.new_context(
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        locale="en-US",
        timezone_id="Asia/Tokyo",
        user_agent=IPHONE,
    )
    phone.set_default_timeout(TIMEOUT_MS)
    phone.set_default_navigation_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.problems = PageProblems(page)
        shots = Shots(page, ARTIFACTS / "test_times_are_local_and_sessions_are_named_on_a_phone")
        member = make_member(name="Tomo Tokyo")
        page.goto(live_server("/login?next=/account"))
        page.get_by_label("Email").fill(member.email)
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        with page.expect_navigation():
            page.get_by_role("button", name="Sign in", exact=True).click()
        page.get_by_role("heading", name="Your Credits ID account").wait_for()

        session = page.locator("li.session").first
        assert session.locator("strong").inner_text() == "Safari on iOS"
        assert session.locator(".device").inner_text() == "iPhone"
        signed_in = session.locator("time").first
        utc = datetime.fromisoformat(signed_in.get_attribute("datetime")).astimezone(UTC)
        assert signed_in.get_attribute("title").startswith(utc.strftime("%Y-%m-%d %H:%M:%S UTC"))
        assert "Asia/Tokyo" in signed_in.get_attribute("title")
        shown = signed_in.inner_text()
        assert "GMT+9" in shown and "UTC" not in shown, shown  # the member's zone, not the server's
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        shots.take("account-local-times")
        assert page.problems.messages == [], page.problems.messages
    finally:
        phone.close()
