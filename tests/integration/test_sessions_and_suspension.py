"""Switching account ("Not you?") without losing the pending request, the account page's list of
sessions with a sign-out per session, and an admin's suspension of a member (with what every check
refuses of a suspended member or a disabled app on its own) - over real HTTP."""

from __future__ import annotations

import base64
import json

import requests

from app.core.extensions import db
from app.models import AuditEvent, AuthorizationCode, Client, LoginSession, Token, User
from app.models.base import sha256_hex, utcnow
from tests.factories import PASSWORD, db_state, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, hidden, query, sign_in
from tests.integration.console_support import alerts, flashes, fresh, signed_in, userinfo
from tests.integration.test_introspection import introspect
from tests.issued import OFFLINE, issue

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
PHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1"
)


def id_token_sub(rp: RelyingParty, code: str) -> str:
    """The subject of the ID token the code redeems to (its signature is the ID-token tests' job)."""
    body = rp.exchange(code).json()
    payload = body["id_token"].split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"]


def switch(browser: Browser, page) -> object:
    return browser.follow(
        browser.post(
            "/login/switch",
            data={"csrf_token": csrf_token(page.text), "interaction": hidden(page.text, "interaction") or ""},
        )
    )


def test_not_you_on_the_consent_page_switches_account_and_keeps_the_request(live_server):
    first, second = make_member(name="Ann First"), make_member(name="Ben Second")
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = Browser(live_server.url)
    params = rp.auth_params(scope="openid profile")
    browser.authorize(params)
    consent = browser.login(first.email)
    assert 'name="decision"' in consent.text
    assert "Signed in as <strong>Ann First</strong>" in consent.text and "Not you? Use another account" in consent.text

    login = switch(browser, consent)
    assert login.status_code == 200 and 'type="password"' in login.text
    assert hidden(login.text, "interaction") == hidden(consent.text, "interaction")  # the same pending request
    assert "Signed in as" not in login.text and first.email not in login.text
    consent_b = browser.login(second.email)
    assert "Signed in as <strong>Ben Second</strong>" in consent_b.text
    callback = browser.consent(allow=True)
    assert callback.status_code == 302
    returned = query(callback.headers["Location"])
    assert returned["state"] == params["state"]
    assert id_token_sub(rp, returned["code"]) == second.sub
    fresh()
    assert LoginSession.query.filter_by(user_id=first.id, ended_at=None).count() == 0  # the first was signed out


def test_not_you_when_asked_to_sign_in_again(live_server):
    """prompt=login: the login page names who is signed in and offers another account."""
    first, second = make_member(name="Cy Current"), make_member()
    client, secret = make_client(trusted=True)
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = signed_in(live_server.url, first.email, "/account")
    page = browser.authorize(rp.auth_params(prompt="login"))
    assert 'type="password"' in page.text and "Signed in as <strong>Cy Current</strong>" in page.text
    assert f'value="{first.email}"' in page.text  # continue as: the email is filled in
    login = switch(browser, page)
    assert "Signed in as" not in login.text
    callback = browser.login(second.email)
    assert callback.status_code == 302
    assert id_token_sub(rp, query(callback.headers["Location"])["code"]) == second.sub


def test_the_account_page_lists_sessions_and_signs_one_out(live_server):
    member, other = make_member(), make_member()
    laptop = Browser(live_server.url)
    laptop.session.headers["User-Agent"] = FIREFOX
    phone = Browser(live_server.url)
    phone.session.headers["User-Agent"] = PHONE
    for browser in (laptop, phone):
        page = browser.get("/login")
        assert (
            browser.post(
                "/login",
                data={
                    "csrf_token": csrf_token(page.text),
                    "email": member.email,
                    "password": PASSWORD,
                    "next": "/account",
                },
            ).status_code
            == 302
        )
    elsewhere = signed_in(live_server.url, other.email, "/account")

    account = laptop.get("/account").text
    assert "Where you are signed in" in account
    assert "Firefox on Linux" in account and "this browser" in account and "Safari on iOS" in account
    assert '<span class="device">iPhone</span>' in account  # a device hint, where the browser names one
    assert "127.0.0.1" in account
    fresh()
    phone_row = LoginSession.query.filter_by(user_id=member.id, user_agent=PHONE).one()
    other_row = LoginSession.query.filter_by(user_id=other.id).one()
    assert f"/account/sessions/{phone_row.id}/sign-out" in account
    assert f"/account/sessions/{other_row.id}/sign-out" not in account

    # Another member's session cannot be ended from here.
    refused = laptop.post(f"/account/sessions/{other_row.id}/sign-out", data={"csrf_token": csrf_token(account)})
    assert refused.status_code == 303
    assert "already ended" in " ".join(flashes(laptop.get("/account").text))
    assert elsewhere.get("/account").status_code == 200

    done = laptop.post(f"/account/sessions/{phone_row.id}/sign-out", data={"csrf_token": csrf_token(account)})
    assert done.status_code == 303
    assert "That session is signed out." in " ".join(flashes(laptop.get("/account").text))
    assert phone.get("/account").status_code == 302  # the phone is signed out
    assert laptop.get("/account").status_code == 200  # this browser is not
    fresh()
    event = AuditEvent.query.filter_by(action="session.signed_out").one()
    assert event.actor_id == member.id and event.detail == {"session_id": phone_row.id}


def test_an_admin_suspends_a_member_and_lifts_it(live_server, mailbox):
    admin = make_member(role="admin")
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    member_browser = Browser(live_server.url)
    params = rp.auth_params(scope="openid email offline_access")
    member_browser.authorize(params)
    member_browser.login(member.email)
    callback = member_browser.consent(allow=True)
    tokens = rp.exchange(query(callback.headers["Location"])["code"]).json()

    console = signed_in(live_server.url, admin.email, "/console/users")
    page = console.get(f"/console/users?q={member.email}")
    assert "Suspend" in page.text
    done = console.post(
        f"/console/users/{member.id}/suspend", data={"csrf_token": csrf_token(page.text), "reason": "Abuse report 42"}
    )
    assert done.status_code == 303
    assert "is suspended: 1 sessions ended, 1 tokens revoked" in " ".join(
        flashes(console.get(f"/console/users?q={member.email}").text)
    )

    assert member_browser.get("/account").status_code == 302  # signed out
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 401
    assert rp.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    stranger = Browser(live_server.url)
    login = stranger.get("/login")
    refused = stranger.post(
        "/login", data={"csrf_token": csrf_token(login.text), "email": member.email, "password": PASSWORD}
    )
    assert refused.status_code == 403 and "This account is suspended" in alerts(refused.text)
    wrong = stranger.post(
        "/login", data={"csrf_token": csrf_token(login.text), "email": member.email, "password": "not the password"}
    )
    assert wrong.status_code == 401  # without the password nothing tells that the account is suspended
    forgot = stranger.get("/password/forgot")
    assert (
        stranger.post(
            "/password/forgot", data={"csrf_token": csrf_token(forgot.text), "email": member.email}
        ).status_code
        == 200
    )
    mailbox.assert_none_to(member.email, wait=0.5)  # no reset link around the suspension

    # Admins cannot suspend themselves.
    own = console.post(
        f"/console/users/{admin.id}/suspend", data={"csrf_token": csrf_token(page.text), "reason": "Abuse report 42"}
    )
    assert own.status_code == 303
    assert "cannot suspend your own account" in " ".join(flashes(console.get("/console/users").text))

    page = console.get(f"/console/users?q={member.email}")
    assert "Lift suspension" in page.text and "suspended" in page.text
    lifted = console.post(
        f"/console/users/{member.id}/suspend", data={"csrf_token": csrf_token(page.text), "lift": "1"}
    )
    assert lifted.status_code == 303
    assert (
        stranger.post(
            "/login", data={"csrf_token": csrf_token(login.text), "email": member.email, "password": PASSWORD}
        ).status_code
        == 302
    )
    fresh()
    actions = [e.action for e in AuditEvent.query.filter_by(subject_id=member.id).order_by(AuditEvent.id)]
    assert actions[-2:] == ["user.suspended", "user.unsuspended"]
    assert db.session.get(User, member.id).suspended_at is None


def test_a_suspension_needs_a_reason_kept_in_the_audit_and_never_the_admins_own(live_server):
    """The list links to a confirmation page (no one-click suspend); without a reason nothing is
    suspended; the reason given lands in the audit event; the admin's own row offers no Suspend."""
    admin = make_member(role="admin")
    member = make_member()
    console = signed_in(live_server.url, admin.email, "/console/users")
    listing = console.get("/console/users").text
    assert f'href="/console/users/{member.id}/suspend"' in listing
    assert f'href="/console/users/{admin.id}/suspend"' not in listing
    confirm = console.get(f"/console/users/{member.id}/suspend")
    assert confirm.status_code == 200 and "Reason (kept in the audit log)" in confirm.text
    for reason in ("", "   ", "x" * 201):
        refused = console.post(
            f"/console/users/{member.id}/suspend", data={"csrf_token": csrf_token(confirm.text), "reason": reason}
        )
        assert refused.status_code == 400 and "reason" in refused.text.lower()
    fresh()
    assert not db.session.get(User, member.id).is_suspended
    assert console.post(f"/console/users/{member.id}/suspend", data={"reason": "spam"}).status_code == 400  # no CSRF
    done = console.post(
        f"/console/users/{member.id}/suspend",
        data={"csrf_token": csrf_token(confirm.text), "reason": "  Chargeback fraud, ticket 118 "},
    )
    assert done.status_code == 303 and done.headers["Location"] == f"/console/users/{member.id}"
    fresh()
    event = AuditEvent.query.filter_by(action="user.suspended", subject_id=member.id).one()
    assert event.detail["reason"] == "Chargeback fraud, ticket 118" and event.actor_id == admin.id
    own = console.get(f"/console/users/{admin.id}/suspend")
    assert "You cannot suspend your own account" in own.text and 'name="reason"' not in own.text


def test_the_member_page_shows_what_the_member_has(live_server):
    admin = make_member(role="admin")
    member = make_member(name="Ada Lovelace", verified=False)
    console = signed_in(live_server.url, admin.email, "/console/users")
    signed_in(live_server.url, member.email, "/account")
    page = console.get(f"/console/users/{member.id}")
    assert page.status_code == 200
    text = page.text
    assert "Ada Lovelace" in text and member.email in text and "not verified" in text
    assert "off (password only)" in text
    assert "never" not in text.split("Last sign-in")[1].split("</dd>")[0]  # the sign-in above
    assert ("Chrome" not in text and "Unknown browser" in text) or "python" in text.lower()  # the session's browser
    assert "Sessions" in text and "Connected apps" in text and "API keys" in text and "Recent events" in text
    assert "Signed in" in text  # the sign-in's audit event
    assert console.get("/console/users/no-such-member").status_code == 404
    member_console = signed_in(live_server.url, make_member().email, "/account")
    assert member_console.get(f"/console/users/{member.id}").status_code in (302, 403, 404)


def test_the_cli_suspends_and_lifts(app):
    member = make_member()
    runner = app.test_cli_runner()
    result = runner.invoke(args=["users", "suspend", member.email, "--reason", "fraud report", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["suspended"] is True
    fresh()
    assert db.session.get(User, member.id).is_suspended
    event = AuditEvent.query.filter_by(action="user.suspended").one()
    assert event.source == "cli" and event.detail["reason"] == "fraud report"
    assert runner.invoke(args=["users", "unsuspend", member.email]).exit_code == 0
    fresh()
    assert not db.session.get(User, member.id).is_suspended


# -- a suspended member's and a disabled app's tokens are refused by every check on its own ------


def suspended_behind_the_revocations_back(member: User) -> None:
    """Mark the member suspended and nothing else: as if a token had escaped the revocation that
    a suspension makes (every check must refuse it by itself)."""
    db.session.execute(db.update(User).where(User.id == member.id).values(suspended_at=utcnow()))
    db.session.commit()


def test_a_suspended_members_unrevoked_tokens_and_codes_are_refused(live_server):
    issued = issue(live_server.url)
    code = sign_in(live_server.url, issued.rp, issued.member.email, scope=OFFLINE, browser=issued.browser)[0]["code"]
    rows_before = db_state()["tokens"]

    suspended_behind_the_revocations_back(issued.member)

    assert userinfo(live_server.url, issued.access_token).status_code == 401
    me = requests.get(
        live_server.url + "/v1/me", headers={"Authorization": f"Bearer {issued.access_token}"}, timeout=30
    )
    assert me.status_code == 401 and 'error="invalid_token"' in me.headers["WWW-Authenticate"]
    refused = issued.rp.refresh(issued.refresh_token)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    exchanged = issued.rp.exchange(code)
    assert exchanged.status_code == 400 and exchanged.json()["error"] == "invalid_grant"
    for token in (issued.access_token, issued.refresh_token):
        assert introspect(live_server.url, issued, token).json() == {"active": False}
    # Nothing was spent or issued: the refresh token and the code are as they were.
    assert db_state()["tokens"] == rows_before
    unused = db.select(AuthorizationCode.id).where(
        AuthorizationCode.code_hash == sha256_hex(code), AuthorizationCode.used_at.is_(None)
    )
    assert db.session.scalar(unused) is not None


def test_a_disabled_apps_unrevoked_tokens_are_refused(live_server):
    issued = issue(live_server.url)
    rows_before = db_state()["tokens"]

    db.session.execute(db.update(Client).where(Client.client_id == issued.client_id).values(status="disabled"))
    db.session.commit()

    assert userinfo(live_server.url, issued.access_token).status_code == 401
    # Unknown to the token endpoint once its process hears of the change (at once on SQLite; on
    # PostgreSQL a kept copy of the app goes when the notice arrives): until then the refresh's
    # own statement refuses it.
    assert issued.rp.refresh(issued.refresh_token).json()["error"] in ("invalid_client", "invalid_grant")
    assert db_state()["tokens"] == rows_before


def test_a_suspension_ends_every_token_a_rotating_chain_left(live_server, mailbox):
    """Without concurrency (SQLite serializes writers; tests/production/test_revocation_races.py
    races it on PostgreSQL): a chain rotated a few times, then suspended - every row of it is dead."""
    admin = make_member(role="admin")
    issued = issue(live_server.url)
    access_tokens, refresh_token = [issued.access_token], issued.refresh_token
    for _ in range(3):
        body = issued.rp.refresh(refresh_token).json()
        access_tokens.append(body["access_token"])
        refresh_token = body["refresh_token"]

    console = signed_in(live_server.url, admin.email, "/console/users")
    page = console.get(f"/console/users?q={issued.member.email}")
    assert (
        console.post(
            f"/console/users/{issued.member.id}/suspend",
            data={"csrf_token": csrf_token(page.text), "reason": "Abuse report 42"},
        ).status_code
        == 303
    )

    fresh()
    rows = db.session.scalars(db.select(Token).where(Token.user_id == issued.member.id)).all()
    assert len(rows) == 4 and all(row.revoked_at is not None for row in rows)
    assert [userinfo(live_server.url, token).status_code for token in access_tokens] == [401] * 4
    assert issued.rp.refresh(refresh_token).json()["error"] == "invalid_grant"
