"""A member-facing page's change is one unit of work (issue 20): when any step of it fails, nothing
of the change reaches the database, and the mail that would announce it is not sent.

In-process, through Flask's test client on a second app instance over the test database, so a
step can be made to fail with monkeypatch; exceptions become 500 pages, as in production."""

from __future__ import annotations

import re
from html import unescape

import pyotp
import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from app.core.extensions import db, limiter
from app.models import LoginSession, TotpFactor, User
from app.services import audit, throttle
from tests.factories import PASSWORD, db_state, make_member
from tests.flows import csrf_token
from tests.issued import separate_app


@pytest.fixture(scope="module")
def web(settings):
    app = separate_app(settings)
    app.config["PROPAGATE_EXCEPTIONS"] = False  # a failing step is a 500 page, not an exception in the test
    return app


@pytest.fixture(autouse=True)
def fresh_counters(web):
    limiter.init_app(web)  # another module's app may have taken the shared limiter over
    limiter.reset()
    throttle.reset_fallback()
    yield
    limiter.reset()


@pytest.fixture
def sent(monkeypatch) -> list:
    """The mails the account pages hand over for sending (after their commit)."""
    mails: list = []
    monkeypatch.setattr("app.web.account.two_step_views.send_later", mails.append)
    monkeypatch.setattr("app.web.account.views.send_later", mails.append)
    return mails


def signed_in(web, email: str):
    browser = web.test_client()
    page = browser.get("/login")
    response = browser.post(
        "/login", data={"csrf_token": csrf_token(page.get_data(as_text=True)), "email": email, "password": PASSWORD}
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    return browser


def failing_on(action: str):
    """audit.record, except that recording `action` raises (a step late in the unit of work)."""

    def record(name: str, *args, **kwargs):
        if name == action:
            raise RuntimeError(f"recording {name} failed")
        return audit.record(name, *args, **kwargs)

    return record


def test_turning_on_the_authenticator_app_is_all_or_nothing(web, sent, monkeypatch):
    member = make_member()
    member_id, email = member.id, member.email
    browser = signed_in(web, email)
    page = browser.get("/account/two-step/setup").get_data(as_text=True)
    secret = unescape(re.search(r'id="totp-secret">([^<]+)<', page).group(1)).replace(" ", "")
    form = {"csrf_token": csrf_token(page), "current": PASSWORD, "code": pyotp.TOTP(secret).now()}
    before = db_state()

    # The factor is confirmed and recovery codes are made, then the audit line fails.
    monkeypatch.setattr("app.services.second_factor.record", failing_on("2fa.enrolled"))
    assert browser.post("/account/two-step/setup", data=form).status_code == 500
    assert db_state() == before  # not confirmed, no recovery codes, no audit line, the code not spent
    assert sent == []  # no "two-step verification was turned on" notice for what did not happen

    # The same code works once the step no longer fails: nothing of the first try was kept.
    monkeypatch.setattr("app.services.second_factor.record", audit.record)
    done = browser.post("/account/two-step/setup", data=form)
    assert done.status_code == 200
    assert len(re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", done.get_data(as_text=True))) == 10
    assert db.session.get(TotpFactor, member_id).confirmed_at is not None
    assert len(sent) == 1


def test_a_password_change_whose_commit_fails_keeps_the_old_password_and_mails_nothing(web, sent):
    member = make_member()
    member_id, email, old_hash = member.id, member.email, member.password_hash
    browser, elsewhere = signed_in(web, email), signed_in(web, email)
    page = browser.get("/account/password").get_data(as_text=True)
    form = {"csrf_token": csrf_token(page), "current": PASSWORD, "new": "a brand new password", "confirm": ""}
    form["confirm"] = form["new"]
    before = db_state()

    failures = []

    def commit_fails(session):
        if not failures:
            failures.append(True)
            raise RuntimeError("the database refused the commit")

    event.listen(Session, "before_commit", commit_fails)
    try:
        assert browser.post("/account/password", data=form).status_code == 500
    finally:
        event.remove(Session, "before_commit", commit_fails)
    assert failures
    assert db_state() == before  # the old password, both sessions live, no audit line
    assert sent == []  # "your password was changed" only after it was
    assert elsewhere.get("/account").status_code == 200  # still signed in there

    # (The failed request had already swapped this browser's cookie for a session that was never
    # stored: it signs in again.)
    browser = signed_in(web, email)
    form["csrf_token"] = csrf_token(browser.get("/account/password").get_data(as_text=True))
    assert browser.post("/account/password", data=form).status_code == 303
    db.session.remove()
    assert db.session.get(User, member_id).password_hash != old_hash
    live = db.session.scalars(
        db.select(LoginSession).where(LoginSession.user_id == member_id, LoginSession.ended_at.is_(None))
    ).all()
    assert len(live) == 1  # this browser's fresh session; the other one ended
    assert elsewhere.get("/account").status_code == 302
    assert len(sent) == 1
