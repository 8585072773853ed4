"""The account's safeguards in a real browser, found by what a person sees: a pending change of
email address shown on the account page and cancelled there, and sudo mode's confirmation page
(removing a passkey) working with JavaScript turned off. No page may need an inline script (the
browser reports CSP violations as errors)."""

from __future__ import annotations

import pytest

from app.core.extensions import db
from app.models import OneTimeLink, Passkey
from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def sign_in_to_account(page, base: str, email: str) -> None:
    page.goto(f"{base}/login?next=/account")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("heading", name="Your Credits ID account").wait_for()


def test_a_pending_email_change_is_shown_and_cancelled(live_server, page, shots, mailbox):
    member = make_member(name="Casey Cancel")
    new = "typo-" + member.email
    sign_in_to_account(page, live_server.url, member.email)
    page.get_by_role("link", name="Change", exact=True).click()
    page.get_by_label("New email address").fill(new)
    page.get_by_label("Your password").fill(PASSWORD)
    shots.take("change-email")
    page.get_by_role("button", name="Send the link").click()
    page.get_by_role("heading", name="Your Credits ID account").wait_for()

    pending = page.locator("#pending-email")
    assert f"A change to {new} was asked for" in pending.inner_text()
    assert pending.locator("time").get_attribute("datetime")
    assert f"until then your address stays {member.email}" in pending.inner_text()
    shots.take("pending-change")
    mailbox.wait_for(member.email, subject="security notice")  # the current address is told at once

    page.get_by_role("button", name=f"Cancel the change to {new}").click()
    page.get_by_role("heading", name="Your Credits ID account").wait_for()
    assert "The change of address is cancelled" in page.locator(".flash").inner_text()
    assert page.locator("#pending-email").count() == 0
    shots.take("change-cancelled")
    db.session.expire_all()
    assert OneTimeLink.query.filter_by(user_id=member.id, used_at=None, email=new).count() == 0
    no_page_problems(page)


@pytest.fixture
def page_without_javascript(chromium):
    context = chromium.new_context(viewport={"width": 1100, "height": 900}, locale="en-US", java_script_enabled=False)
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.problems = PageProblems(page)
    yield page
    context.close()


def test_removing_a_passkey_asks_to_confirm_without_javascript(live_server, page_without_javascript):
    page = page_without_javascript
    shots = Shots(page, ARTIFACTS / "test_removing_a_passkey_asks_to_confirm_without_javascript")
    member = make_member(name="Sam Sudo")
    sign_in_to_account(page, live_server.url, member.email)
    db.session.add(Passkey(user_id=member.id, credential_id=f"{member.id}-laptop", public_key=b"cose", name="Laptop"))
    db.session.commit()
    page.reload()

    page.get_by_role("button", name="Remove passkey Laptop").click()
    page.get_by_role("heading", name="Remove the passkey “Laptop”?").wait_for()  # never in one click
    assert "It is your last second factor" in page.locator(".lead").inner_text()
    shots.take("remove-passkey-confirm")
    page.get_by_label("Your password").fill("not my password")
    page.get_by_role("button", name="Remove passkey").click()
    page.get_by_role("heading", name="Confirm it is you").wait_for()
    assert 'To remove the passkey "Laptop", type your password.' in page.locator(".lead").inner_text()
    assert "Your password is not right." in page.get_by_role("alert").inner_text()
    assert page.get_by_label("Your password").get_attribute("aria-invalid") == "true"
    shots.take("wrong-password")
    db.session.expire_all()
    assert Passkey.query.filter_by(user_id=member.id).count() == 1

    page.get_by_label("Your password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    page.get_by_role("heading", name="Your Credits ID account").wait_for()
    assert 'The passkey "Laptop" is removed' in page.locator(".flash").inner_text()
    shots.take("passkey-removed")
    db.session.expire_all()
    assert Passkey.query.filter_by(user_id=member.id).count() == 0
    no_page_problems(page)
