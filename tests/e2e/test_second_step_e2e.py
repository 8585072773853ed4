"""The second step of sign-in in a real browser, on a 390x844 phone: the code from the app asks
for a digits keypad, a recovery code has a step of its own with a text keyboard (the codes have
letters), and a right code that was just used is called that - not "not right"."""

from __future__ import annotations

import pyotp
import pytest

from app.core.extensions import db
from app.models import TotpFactor
from app.services import second_factor
from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def with_authenticator_app(member) -> tuple[str, list[str]]:
    """Set up an authenticator app for `member` as the account page does; returns the secret and
    the recovery codes. The confirming code's 30-second step is now used."""
    secret = second_factor.begin_totp(member)
    codes = second_factor.confirm_totp(member, pyotp.TOTP(secret).now())
    db.session.commit()
    return secret, codes


@pytest.fixture
def phone(chromium, request):
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, locale="en-US"
    )
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.problems = PageProblems(page)
    yield page
    context.close()


def sign_in_with_password(page, base: str, email: str) -> None:
    page.goto(f"{base}/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("heading", name="Two-step verification").wait_for()


def fits_width(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_a_recovery_code_has_its_own_step_with_a_text_keyboard(live_server, phone):
    page = phone
    shots = Shots(page, ARTIFACTS / "test_a_recovery_code_has_its_own_step_with_a_text_keyboard")
    member = make_member(name="Riley Recovery")
    _, codes = with_authenticator_app(member)

    sign_in_with_password(page, live_server.url, member.email)
    app_code = page.get_by_label("Code from your authenticator app")
    assert app_code.get_attribute("inputmode") == "numeric"  # the digits keypad, for the app's code
    assert fits_width(page)
    shots.take("second-step-app-code")

    page.get_by_role("link", name="Use a recovery code").click()
    page.get_by_role("heading", name="Use a recovery code").wait_for()
    field = page.get_by_label("Recovery code")
    assert field.get_attribute("inputmode") == "text" and field.get_attribute("type") == "text"
    assert field.get_attribute("autocapitalize") == "none"
    assert page.evaluate("() => document.activeElement.id") == "code"
    assert fits_width(page)
    shots.take("recovery-code-step")

    page.keyboard.type("not-a-real-code1")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "That recovery code is not right" in page.get_by_role("alert").inner_text()
    assert page.get_by_label("Recovery code").get_attribute("aria-invalid") == "true"
    shots.take("recovery-code-wrong")

    page.get_by_label("Recovery code").fill(codes[0].upper().replace("-", " "))  # as read off paper
    with page.expect_navigation():
        page.get_by_role("button", name="Verify").click()
    assert "You are signed in" in page.locator("main").inner_text()
    assert "9 left" in page.locator(".flash").inner_text()
    shots.take("signed-in-with-recovery-code")
    no_page_problems(page)


def test_a_code_just_used_is_called_that(live_server, page, shots):
    member = make_member(name="Jo Justused")
    secret, _ = with_authenticator_app(member)
    used_step_code = pyotp.TOTP(secret).now()  # the step the set-up's code used up

    sign_in_with_password(page, live_server.url, member.email)
    page.get_by_label("Code from your authenticator app").fill(used_step_code)
    with page.expect_navigation():
        page.get_by_role("button", name="Verify").click()
    alert = page.get_by_role("alert").inner_text()
    assert "That code was just used" in alert and "Wait for your app to show the next one" in alert
    assert "not right" not in alert
    shots.take("code-just-used")

    page.get_by_label("Code from your authenticator app").fill("000000" if used_step_code != "000000" else "111111")
    with page.expect_navigation():
        page.get_by_role("button", name="Verify").click()
    assert "That code is not right" in page.get_by_role("alert").inner_text()
    shots.take("code-not-right")

    db.session.expire_all()
    db.session.get(TotpFactor, member.id).last_used_step = None  # as if the next 30 seconds came
    db.session.commit()
    page.get_by_label("Code from your authenticator app").fill(pyotp.TOTP(secret).now())
    with page.expect_navigation():
        page.get_by_role("button", name="Verify").click()
    assert "You are signed in" in page.locator("main").inner_text()
    no_page_problems(page)
