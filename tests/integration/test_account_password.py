"""Changing the password on the account page: the current one is checked (and its failures
throttled like logins), the new one is checked, every other session ends, and the change is in
the audit log."""

from __future__ import annotations

from html import unescape

import pytest
import requests

from app.core.extensions import db
from app.models import AuditEvent, Consent, LoginSession, User
from app.services.passwords import passwords
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import alerts, flashes, fresh, signed_in
from tests.sudo_window import SESSION_COOKIE

NEW = "a brand new passphrase"


def login_attempt(live_server, email: str, password: str) -> int:
    """One password tried on the login page, as a stranger's browser would."""
    stranger = Browser(live_server.url)
    page = stranger.get("/login")
    return stranger.post(
        "/login", data={"csrf_token": csrf_token(page.text), "email": email, "password": password}
    ).status_code


def change(browser, current=PASSWORD, new=NEW, confirm=None, **extra):
    page = browser.get("/account/password")
    assert page.status_code == 200
    return browser.post(
        "/account/password",
        data={
            "csrf_token": csrf_token(page.text),
            "current": current,
            "new": new,
            "confirm": new if confirm is None else confirm,
            **extra,
        },
    )


def test_a_member_changes_their_password_and_every_other_session_ends(live_server, mailbox):
    member = make_member()
    here = signed_in(live_server.url, member.email, "/account")
    elsewhere = signed_in(live_server.url, member.email, "/account")
    assert 'href="/account/password"' in here.get("/account").text

    response = change(here)
    assert response.status_code == 303 and response.headers["Location"] == "/account"
    assert "Your password is changed" in " ".join(flashes(here.get("/account").text))
    assert here.get("/account").status_code == 200  # this browser stays signed in, on a fresh session
    assert elsewhere.get("/account").status_code == 302  # the other one is signed out
    fresh()
    user = db.session.get(User, member.id)
    assert passwords.verify(user, NEW) and not passwords.verify(user, PASSWORD)
    assert (
        db.session.scalar(
            db.select(db.func.count(LoginSession.id)).where(
                LoginSession.user_id == member.id, LoginSession.ended_at.is_(None)
            )
        )
        == 1
    )
    [event] = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "password.changed")).all()
    assert event.actor_id == event.subject_id == member.id and event.detail == {"sessions_ended": 2}
    assert NEW not in str(event.detail) and PASSWORD not in str(event.detail)
    # A security notice tells the member (in case it was not them), with where it came from.
    notice = mailbox.wait_for(member.email)
    assert notice.subject == "Credits ID security notice: your password was changed"
    assert "127.0.0.1" in notice.text and "/password/forgot" in notice.text and NEW not in notice.text


def connected_app(live_server, member) -> tuple[RelyingParty, dict]:
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    return rp, rp.exchange(params["code"]).json()


def test_apps_stay_connected_after_a_plain_change(live_server):
    member = make_member()
    rp, tokens = connected_app(live_server, member)
    browser = signed_in(live_server.url, member.email, "/account")
    assert change(browser).status_code == 303
    assert rp.refresh(tokens["refresh_token"]).status_code == 200


def test_after_a_compromise_the_member_disconnects_every_app_too(live_server):
    member = make_member()
    rp, tokens = connected_app(live_server, member)
    browser = signed_in(live_server.url, member.email, "/account")
    response = change(browser, disconnect_apps="y")
    assert response.status_code == 303
    assert "every app is disconnected" in " ".join(flashes(browser.get("/account").text))
    assert rp.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    fresh()
    assert Consent.query.filter_by(user_id=member.id).count() == 0
    [event] = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "password.changed")).all()
    assert event.detail["tokens_revoked"] == 1


@pytest.mark.parametrize(
    ("current", "new", "confirm", "status", "says"),
    [
        ("not my password", NEW, None, 401, "Your current password is not right."),
        (PASSWORD, "short", None, 400, "Use 10 to 1024 characters."),
        (PASSWORD, NEW, NEW + "!", 400, "The two new passwords differ."),
        ("", NEW, None, 400, "This field is required."),
    ],
    ids=["wrong-current", "too-short", "confirm-differs", "no-current"],
)
def test_refusals_change_nothing(live_server, current, new, confirm, status, says):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    response = change(browser, current, new, confirm)
    assert response.status_code == status and says in response.text
    assert 'aria-invalid="true"' in response.text
    fresh()
    assert passwords.verify(db.session.get(User, member.id), PASSWORD)
    assert browser.get("/account").status_code == 200
    assert db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "password.changed")) is None


def stolen_session(live_server, browser: Browser) -> Browser:
    """Another browser holding only the session cookie of `browser` (not its device cookie)."""
    thief = Browser(live_server.url)
    [cookie] = [c for c in browser.session.cookies if c.name == SESSION_COOKIE]
    thief.session.cookies.set(cookie.name, cookie.value, domain=cookie.domain, path=cookie.path)
    return thief


def test_guessing_the_current_password_spends_the_accounts_login_budget(live_server, settings):
    """A stolen session cannot try passwords faster than the login page allows an unknown browser
    (5 free failures per account, then a growing wait), and the two pages share that one budget."""
    member = make_member()
    browser = stolen_session(live_server, signed_in(live_server.url, member.email, "/account"))
    statuses = [change(browser, current=f"guess number {i}").status_code for i in range(3)]
    statuses += [login_attempt(live_server, member.email, f"wrong guess {i}") for i in range(2)]
    statuses.append(change(browser, current="guess number 9").status_code)
    assert statuses == [401] * 6
    # From now on each failure makes the next attempt wait (1, 2, 4 ... s): a quick guesser is refused.
    for i in range(6):
        blocked = change(browser, current=f"guess number {10 + i}")
        if blocked.status_code == 429:
            break
        assert blocked.status_code == 401
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) > 0
    assert "Too many sign-in attempts. Try again in" in alerts(blocked.text)
    fresh()
    assert passwords.verify(db.session.get(User, member.id), PASSWORD)


def test_signed_out_visitors_are_sent_to_the_login_page(live_server):
    response = requests.get(live_server("/account/password"), allow_redirects=False, timeout=30)
    assert response.status_code == 302 and response.headers["Location"] == "/login?next=/account/password"


@pytest.mark.parametrize(
    "weak, reason",
    [
        ("password123", "this is a very common password"),
        ("qwertyuiop", "common password"),
        ("aaaaaaaaaaaa", 'repeats like "aaa"'),
    ],
)
def test_a_common_or_easily_guessed_password_is_refused_with_the_reason(live_server, weak, reason):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    response = change(browser, new=weak)
    assert response.status_code == 400
    assert "This password is too easy to guess" in response.text and reason in unescape(response.text)
    assert 'minlength="10"' in response.text and 'autocomplete="new-password"' in response.text
    fresh()
    assert passwords.verify(db.session.get(User, member.id), PASSWORD)  # unchanged


def test_the_members_own_name_and_address_count_as_guessable(live_server):
    member = make_member(name="Casey Quartermaine", email="casey.quartermaine@example.test")
    browser = signed_in(live_server.url, member.email, "/account")
    response = change(browser, new="quartermaine2024")
    assert response.status_code == 400 and "This password is too easy to guess" in response.text


def test_the_strength_hint_answers_as_the_rule_does(live_server):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    token = csrf_token(browser.get("/account/password").text)

    def hint(password: str) -> dict:
        answer = browser.post("/password/strength", data={"csrf_token": token, "password": password, "words": ""})
        assert answer.status_code == 200 and answer.headers["Cache-Control"].startswith("no-store")
        return answer.json()

    weak = hint("password123")
    assert weak["acceptable"] is False and weak["score"] <= 1 and "very common password" in weak["reason"]
    assert hint("short")["reason"] == "Use at least 10 characters."
    strong = hint(NEW)
    assert strong["acceptable"] is True and strong["score"] >= 3 and strong["label"] in ("Strong", "Very strong")
    # Without the page's CSRF token the hint is refused like any other POST.
    assert browser.post("/password/strength", data={"password": "x"}).status_code == 400


def test_the_strength_hint_is_budgeted_per_address(live_server):
    browser = Browser(live_server.url)
    token = csrf_token(browser.get("/password/forgot").text)
    answers = [
        browser.post("/password/strength", data={"csrf_token": token, "password": "x" * 12}).status_code
        for _ in range(125)
    ]
    assert answers[:100] == [200] * 100 and answers[-1] == 429  # 120 a minute per address
