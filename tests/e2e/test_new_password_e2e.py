"""Choosing a new password in a real browser, on a 390x844 phone: the strength hint appears as
the member types (the server's estimator, fetched by a script file: no inline script, nothing
from elsewhere), "Show" reveals what was typed, the field says its minimum length, and a common
password is refused with the reason."""

from __future__ import annotations

import pytest

from app.core.extensions import db
from app.models import User
from app.services.passwords import passwords
from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member

NEW = "violet harbour tangerine kettle"


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, locale="en-US"
    )
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.problems = PageProblems(page)
    yield page
    context.close()


def fits_width(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_a_new_password_shows_its_strength_and_a_common_one_is_refused(live_server, phone):
    page = phone
    shots = Shots(page, ARTIFACTS / "test_a_new_password_shows_its_strength_and_a_common_one_is_refused")
    member = make_member(name="Noor Newpass")
    page.goto(live_server("/login?next=/account/password"))
    # The login page's own Show button.
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Show password").click()
    assert page.locator("#password").get_attribute("type") == "text"
    assert page.get_by_role("button", name="Hide password").get_attribute("aria-pressed") == "true"
    shots.take("login-password-shown")
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("heading", name="Change your password").wait_for()

    new = page.locator("#new")
    assert new.get_attribute("minlength") == "10" and new.get_attribute("maxlength") == "1024"
    hint = page.locator("#new-strength")
    assert hint.is_hidden()  # nothing to say before anything is typed
    page.locator("#current").fill(PASSWORD)
    new.press_sequentially("password123", delay=20)
    hint.get_by_text("very common password").wait_for()
    assert "Strength: very weak" in hint.inner_text()
    assert "new-strength" in new.get_attribute("aria-describedby")
    assert fits_width(page)
    shots.take("weak-password-hint")

    # Submitted anyway: the form refuses it with the same reason, and nothing changes.
    page.locator("#confirm").fill("password123")
    with page.expect_navigation():
        page.get_by_role("button", name="Change password").click()
    assert (
        "This password is too easy to guess: this is a very common password"
        in page.locator("#new-error-1").inner_text()
    )
    assert page.locator("#new").get_attribute("aria-invalid") == "true"
    shots.take("weak-password-refused")

    page.locator("#current").fill(PASSWORD)
    page.locator("#new").press_sequentially(NEW, delay=10)
    page.locator("#new-strength").get_by_text("Strength: very strong").wait_for()
    page.locator("[data-reveal=new]").click()
    assert page.locator("#new").get_attribute("type") == "text" and page.locator("#new").input_value() == NEW
    page.locator("#confirm").fill(NEW)
    assert fits_width(page)
    shots.take("strong-password-shown")
    with page.expect_navigation():
        page.get_by_role("button", name="Change password").click()
    assert "Your password is changed" in page.locator(".flash").inner_text()
    db.session.expire_all()
    assert passwords.verify(db.session.get(User, member.id), NEW)
    no_page_problems(page)
