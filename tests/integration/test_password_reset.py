"""Forgot password, over real HTTP and real SMTP: the provider mails a single-use link to the
aiosmtpd server the tests run on loopback, and the tests follow the link from the received mail."""

from __future__ import annotations

import re
from datetime import timedelta

from app.core.extensions import db
from app.models import AuditEvent, Consent, LoginSession, OneTimeLink, User
from app.models.base import sha256_hex, utcnow
from app.services.passwords import passwords
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import alerts, flashes, fresh, signed_in

NEW = "a fresh passphrase after reset"


def ask_for_link(live_server, email: str, browser: Browser | None = None):
    browser = browser or Browser(live_server.url)
    login = browser.get("/login")
    assert 'href="/password/forgot"' in login.text and "Forgot password?" in login.text
    page = browser.get("/password/forgot")
    assert page.status_code == 200 and 'autocomplete="username"' in page.text
    return browser.post("/password/forgot", data={"csrf_token": csrf_token(page.text), "email": email})


def set_new_password(browser: Browser, url: str, new: str = NEW, confirm: str | None = None, **extra):
    page = browser.get(url)
    assert page.status_code == 200, page.text[:300]
    token = re.search(r'name="token" type="hidden" value="([^"]+)"', page.text).group(1)
    return browser.post(
        "/password/reset",
        data={
            "csrf_token": csrf_token(page.text),
            "token": token,
            "new": new,
            "confirm": new if confirm is None else confirm,
            **extra,
        },
    )


def can_sign_in(live_server, email: str, password: str) -> bool:
    stranger = Browser(live_server.url)
    page = stranger.get("/login")
    return (
        stranger.post(
            "/login", data={"csrf_token": csrf_token(page.text), "email": email, "password": password}
        ).status_code
        == 302
    )


def test_a_member_who_forgot_the_password_sets_a_new_one_from_the_mailed_link(live_server, mailbox):
    member = make_member(verified=False)
    elsewhere = signed_in(live_server.url, member.email, "/account")
    browser = Browser(live_server.url)

    answer = ask_for_link(live_server, member.email.upper(), browser)
    assert answer.status_code == 200 and "Check your email" in answer.text and "30 minutes" in answer.text

    mail = mailbox.wait_for(member.email)
    assert mail.subject == "Reset your Credits ID password"
    assert mail.message["From"] == "Credits ID <no-reply@id.test>" and mail.to == member.email
    url = mail.link()
    assert url.startswith(live_server.url + "/password/reset?token=")
    fresh()
    [row] = OneTimeLink.query.filter_by(user_id=member.id).all()
    assert row.purpose == "reset" and row.token_hash == sha256_hex(mail.token())  # only the hash is stored
    assert timedelta(minutes=29) < row.expires_at - row.created_at <= timedelta(minutes=30)

    done = set_new_password(browser, url)
    assert done.status_code == 303 and done.headers["Location"] == "/login"
    assert "Sign in with your new password" in " ".join(flashes(browser.get("/login").text))
    assert elsewhere.get("/account").status_code == 302  # every session ended
    fresh()
    assert LoginSession.query.filter_by(user_id=member.id, ended_at=None).count() == 0
    user = db.session.get(User, member.id)
    assert passwords.verify(user, NEW) and not passwords.verify(user, PASSWORD)
    assert user.email_verified  # the member proved they read the mailbox
    actions = [e.action for e in AuditEvent.query.filter_by(subject_id=member.id).order_by(AuditEvent.id)]
    assert actions == ["password.reset_requested", "password.reset_completed", "email.verified"]
    completed = AuditEvent.query.filter_by(action="password.reset_completed").one()
    assert completed.detail == {"sessions_ended": 1} and NEW not in str(completed.detail)
    assert can_sign_in(live_server, member.email, NEW) and not can_sign_in(live_server, member.email, PASSWORD)
    notice = mailbox.wait_for(member.email, count=2)
    assert notice.subject == "Credits ID security notice: your password was reset with a link sent to this address"

    # Single use: the same link again is refused, and changes nothing.
    again = browser.get(url)
    assert again.status_code == 400 and "no longer works" in again.text
    assert 'href="/password/forgot"' in again.text
    replay = browser.post(
        "/password/reset",
        data={
            "csrf_token": csrf_token(browser.get("/password/forgot").text),
            "token": mail.token(),
            "new": "x" * 12,
            "confirm": "x" * 12,
        },
    )
    assert replay.status_code == 400
    fresh()
    assert passwords.verify(db.session.get(User, member.id), NEW)


def test_unknown_and_known_emails_get_the_same_answer_and_only_members_get_mail(live_server, mailbox):
    member = make_member()
    known = ask_for_link(live_server, member.email)
    unknown = ask_for_link(live_server, "nobody-at-all@example.test")

    def normalized(html: str) -> str:
        html = re.sub(r'name="csrf_token"[^>]*value="[^"]*"', "CSRF", html)
        return html.replace(member.email, "EMAIL").replace("nobody-at-all@example.test", "EMAIL")

    assert known.status_code == unknown.status_code == 200
    assert normalized(known.text) == normalized(unknown.text)
    mailbox.wait_for(member.email)
    mailbox.assert_none_to("nobody-at-all@example.test")
    fresh()
    assert OneTimeLink.query.count() == 1


def test_a_newer_link_replaces_the_older_one(live_server, mailbox):
    member = make_member()
    ask_for_link(live_server, member.email)
    first = mailbox.wait_for(member.email).link()
    ask_for_link(live_server, member.email)
    second = mailbox.wait_for(member.email, count=2).link()
    assert first != second
    browser = Browser(live_server.url)
    refused = browser.get(first)
    assert refused.status_code == 400 and "replaced by a newer one" in refused.text
    assert set_new_password(browser, second).status_code == 303


def test_an_expired_link_is_refused(live_server, mailbox):
    member = make_member()
    ask_for_link(live_server, member.email)
    url = mailbox.wait_for(member.email).link()
    fresh()
    row = OneTimeLink.query.filter_by(user_id=member.id).one()
    row.expires_at = utcnow() - timedelta(seconds=1)  # 30 minutes later
    db.session.commit()
    response = Browser(live_server.url).get(url)
    assert response.status_code == 400 and "expired" in response.text
    assert Browser(live_server.url).get("/password/reset?token=made-up").status_code == 400
    fresh()
    assert passwords.verify(db.session.get(User, member.id), PASSWORD)


def test_a_refused_new_password_keeps_the_link_usable(live_server, mailbox):
    member = make_member()
    ask_for_link(live_server, member.email)
    url = mailbox.wait_for(member.email).link()
    browser = Browser(live_server.url)
    short = set_new_password(browser, url, new="short")
    assert short.status_code == 400 and "Use 10 to 1024 characters." in short.text
    differs = set_new_password(browser, url, confirm=NEW + "!")
    assert differs.status_code == 400 and "The two new passwords differ." in differs.text
    assert set_new_password(browser, url).status_code == 303


def test_the_member_can_also_disconnect_every_app(live_server, mailbox):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    tokens = rp.exchange(params["code"]).json()
    ask_for_link(live_server, member.email)
    browser = Browser(live_server.url)
    assert set_new_password(browser, mailbox.wait_for(member.email).link(), disconnect_apps="y").status_code == 303
    assert "every app is disconnected" in " ".join(flashes(browser.get("/login").text))
    assert rp.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    fresh()
    assert Consent.query.filter_by(user_id=member.id).count() == 0


def test_asking_again_and_again_does_not_flood_the_inbox(live_server, mailbox):
    """MAIL_ACCOUNT_LIMIT (3 per hour): further requests answer the same page and send nothing."""
    member = make_member()
    answers = [ask_for_link(live_server, member.email) for _ in range(5)]
    assert {a.status_code for a in answers} == {200}
    mailbox.wait_for(member.email, count=3)
    mailbox.assert_none_to("nobody")  # let stragglers arrive
    assert len(mailbox.to(member.email)) == 3


def test_the_browser_that_reset_the_password_is_a_known_browser(live_server, mailbox):
    """After an attacker's flood, the member resets the password from a new browser; that browser
    then signs in at once, though unknown browsers still wait."""
    member = make_member()
    attacker = Browser(live_server.url)
    for i in range(8):
        page = attacker.get("/login")
        attacker.post(
            "/login", data={"csrf_token": csrf_token(page.text), "email": member.email, "password": f"guess {i} wrong"}
        )
    assert not can_sign_in(live_server, member.email, PASSWORD)  # an unknown browser must wait
    browser = Browser(live_server.url)
    ask_for_link(live_server, member.email, browser)
    assert set_new_password(browser, mailbox.wait_for(member.email).link()).status_code == 303
    page = browser.get("/login")
    response = browser.post(
        "/login", data={"csrf_token": csrf_token(page.text), "email": member.email, "password": NEW}
    )
    assert response.status_code == 302, alerts(response.text)


def test_a_reset_asked_from_an_apps_sign_in_goes_back_to_it_in_that_browser_only(live_server, mailbox):
    member = make_member()
    client, secret = make_client(trusted=True, name="Liner Notes")
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = Browser(live_server.url)
    login = browser.authorize(rp.auth_params(scope="openid"))
    uid = re.search(r'name="interaction" type="hidden" value="([^"]+)"', login.text).group(1)
    assert f'href="/password/forgot?interaction={uid}"' in login.text
    # Another browser cannot borrow the request: its forgot page names no app.
    stranger = Browser(live_server.url).get(f"/password/forgot?interaction={uid}")
    assert stranger.status_code == 200 and "Liner Notes" not in stranger.text
    page = browser.get(f"/password/forgot?interaction={uid}")
    assert "Then you go on signing in to" in page.text and "Liner Notes" in page.text
    sent = browser.post(
        "/password/forgot", data={"csrf_token": csrf_token(page.text), "email": member.email, "interaction": uid}
    )
    assert f'href="/login?interaction={uid}"' in sent.text
    done = set_new_password(browser, mailbox.wait_for(member.email).link())
    assert done.status_code == 303 and done.headers["Location"] == f"/login?interaction={uid}"
    assert "to continue to Liner Notes" in " ".join(flashes(browser.get(done.headers["Location"]).text))
    back = browser.login(member.email, NEW)
    assert back.status_code == 302 and back.headers["Location"].startswith(rp.redirect_uri)
