"""Verified email addresses, over real HTTP and real SMTP (aiosmtpd on loopback): `email_verified`
in ID tokens and userinfo is true only after the member followed a mailed link; a new address
replaces the old one only once verified; members created by an admin are invited to set a password."""

from __future__ import annotations

import re

from app.core.extensions import db
from app.models import AuditEvent, OneTimeLink, User
from app.models.base import sha256_hex
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import alerts, flashes, fresh, signed_in, userinfo


def claims_after_sign_in(live_server, email: str) -> dict:
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, email, scope="openid email")
    body = rp.exchange(params["code"]).json()
    return userinfo(live_server.url, body["access_token"]).json()


def follow(browser: Browser, url: str):
    """Open the link from the mail, then press the page's button (the link alone changes nothing)."""
    page = browser.get(url)
    assert page.status_code == 200, page.text[:300]
    token = re.search(r'name="token" type="hidden" value="([^"]+)"', page.text).group(1)
    return browser.post("/email/verify", data={"csrf_token": csrf_token(page.text), "token": token})


def test_a_new_member_is_unverified_until_they_follow_the_link(live_server, mailbox):
    member = make_member(verified=False)
    assert claims_after_sign_in(live_server, member.email)["email_verified"] is False

    browser = signed_in(live_server.url, member.email, "/account")
    account = browser.get("/account").text
    assert "not verified" in account and "Send a verification link" in account
    sent = browser.post("/account/email/verify", data={"csrf_token": csrf_token(account)})
    assert sent.status_code == 303
    assert "A verification link is on its way" in " ".join(flashes(browser.get("/account").text))
    mail = mailbox.wait_for(member.email)
    assert mail.subject == "Verify your email address for Credits ID"
    url = mail.link()
    assert url.startswith(live_server.url + "/email/verify?token=")

    # A mail scanner opening the link does not use it up: only the button does.
    assert Browser(live_server.url).get(url).status_code == 200
    fresh()
    assert db.session.get(User, member.id).email_verified is False

    done = follow(browser, url)
    assert done.status_code == 303 and done.headers["Location"] == "/account"
    page = browser.get("/account").text
    assert f"{member.email} is verified." in " ".join(flashes(page)) and "not verified" not in page
    fresh()
    assert db.session.get(User, member.id).email_verified is True
    assert claims_after_sign_in(live_server, member.email)["email_verified"] is True
    assert AuditEvent.query.filter_by(action="email.verified", subject_id=member.id).count() == 1
    # Used up: a second follow is refused.
    again = Browser(live_server.url).get(url)
    assert again.status_code == 400 and "no longer works" in again.text


def test_the_link_works_in_another_browser_too(live_server, mailbox):
    """Members often open mail on their phone: the link needs no session, then asks to sign in."""
    member = make_member(verified=False)
    browser = signed_in(live_server.url, member.email, "/account")
    browser.post("/account/email/verify", data={"csrf_token": csrf_token(browser.get("/account").text)})
    phone = Browser(live_server.url)
    done = follow(phone, mailbox.wait_for(member.email).link())
    assert done.status_code == 303 and done.headers["Location"] == "/login"
    assert "is verified. Sign in to see your account." in " ".join(flashes(phone.get("/login").text))


def test_changing_the_email_address_requires_verifying_the_new_one(live_server, mailbox):
    member = make_member()
    old, new = member.email, "renamed-" + member.email
    browser = signed_in(live_server.url, old, "/account")
    assert 'href="/account/email"' in browser.get("/account").text
    page = browser.get("/account/email")
    wrong = browser.post(
        "/account/email", data={"csrf_token": csrf_token(page.text), "email": new, "current": "not my password"}
    )
    assert wrong.status_code == 401 and "Your password is not right." in alerts(wrong.text)
    assert f"To change your email address to {new}, type your password" in wrong.text
    asked = browser.post(
        "/account/email", data={"csrf_token": csrf_token(page.text), "email": new.upper(), "current": PASSWORD}
    )
    assert asked.status_code == 303
    account = browser.get("/account").text
    assert f"A link is on its way to {new}" in " ".join(flashes(account))
    assert f"A change to <strong>{new}</strong> was asked for" in account
    # The address that still is the account's hears of it now, not only once it is done.
    told = mailbox.wait_for(old, subject="security notice")
    assert f"a change of your email address to {new} was asked for" in told.subject
    assert "Resetting your password, or cancelling the change on your account page, calls it off." in told.text

    # Until the link is followed nothing changes: sign-in and apps keep the old, verified address.
    fresh()
    user = db.session.get(User, member.id)
    assert user.email == old and user.email_verified is True
    [row] = OneTimeLink.query.filter_by(user_id=member.id, purpose="verify").all()
    mail = mailbox.wait_for(new)
    assert row.email == new and row.token_hash == sha256_hex(mail.token())
    assert claims_after_sign_in(live_server, old)["email"] == old

    done = follow(browser, mail.link())
    assert done.status_code == 303
    assert f"Your email address is now {new}." in " ".join(flashes(browser.get("/account").text))
    fresh()
    user = db.session.get(User, member.id)
    assert user.email == new and user.email_verified is True
    notice = mailbox.wait_for(old, subject="was changed")
    assert notice.subject == "Your Credits ID email address was changed" and new in notice.text
    assert notice.links() == []
    info = claims_after_sign_in(live_server, new)
    assert info["email"] == new and info["email_verified"] is True
    changed = AuditEvent.query.filter_by(action="email.changed").one()
    assert changed.detail == {"previous": old, "email": new}


def test_an_address_of_another_member_is_refused(live_server, mailbox):
    member, other = make_member(), make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    page = browser.get("/account/email")
    taken = browser.post(
        "/account/email", data={"csrf_token": csrf_token(page.text), "email": other.email, "current": PASSWORD}
    )
    assert taken.status_code == 400 and "Another account uses that address." in taken.text
    invalid = browser.post(
        "/account/email", data={"csrf_token": csrf_token(page.text), "email": "nope@", "current": PASSWORD}
    )
    assert invalid.status_code == 400
    mailbox.assert_none_to(other.email, wait=0.3)


def test_an_address_taken_before_the_link_is_followed_is_not_applied(live_server, mailbox):
    member = make_member()
    new = "wanted-" + member.email
    browser = signed_in(live_server.url, member.email, "/account")
    page = browser.get("/account/email")
    browser.post("/account/email", data={"csrf_token": csrf_token(page.text), "email": new, "current": PASSWORD})
    url = mailbox.wait_for(new).link()
    make_member(email=new)  # someone else registers that address meanwhile
    refused = follow(browser, url)
    assert refused.status_code == 409 and "Another account uses that address now." in refused.text
    fresh()
    assert db.session.get(User, member.id).email == member.email


def test_an_invited_member_sets_a_password_which_verifies_the_address(app, live_server, mailbox):
    result = app.test_cli_runner().invoke(args=["users", "create", "--email", "invited@example.test", "--name", "Ivy"])
    assert result.exit_code == 0, result.output
    fresh()
    user = User.query.filter_by(email="invited@example.test").one()
    assert user.email_verified is False
    mail = mailbox.wait_for("invited@example.test")
    url = mail.link()
    assert url.startswith(live_server.url + "/invitation?token=") and "7 days" in mail.text

    # No password works before the invitation is accepted.
    stranger = Browser(live_server.url)
    page = stranger.get("/login")
    assert (
        stranger.post(
            "/login", data={"csrf_token": csrf_token(page.text), "email": "invited@example.test", "password": PASSWORD}
        ).status_code
        == 401
    )

    browser = Browser(live_server.url)
    form = browser.get(url)
    assert form.status_code == 200 and "Welcome to Credits ID" in form.text
    token = re.search(r'name="token" type="hidden" value="([^"]+)"', form.text).group(1)
    short = browser.post(
        "/invitation", data={"csrf_token": csrf_token(form.text), "token": token, "new": "short", "confirm": "short"}
    )
    assert short.status_code == 400
    done = browser.post(
        "/invitation", data={"csrf_token": csrf_token(form.text), "token": token, "new": PASSWORD, "confirm": PASSWORD}
    )
    assert done.status_code == 303 and done.headers["Location"] == "/login"
    login = browser.get("/login")
    assert "Your password is set" in " ".join(flashes(login.text))
    assert (
        browser.post(
            "/login", data={"csrf_token": csrf_token(login.text), "email": "invited@example.test", "password": PASSWORD}
        ).status_code
        == 302
    )
    fresh()
    assert db.session.get(User, user.id).email_verified is True
    assert Browser(live_server.url).get(url).status_code == 400  # single use
    actions = {e.action for e in AuditEvent.query.filter_by(subject_id=user.id)}
    assert {"member.invited", "member.invitation_accepted"} <= actions


def test_an_admin_invites_a_member_from_the_console(live_server, mailbox):
    admin = make_member(role="admin")
    console = signed_in(live_server.url, admin.email, "/console/users")
    page = console.get("/console/users")
    assert "Invite a member" in page.text
    sent = console.post(
        "/console/users/invite",
        data={
            "csrf_token": csrf_token(page.text),
            "email": "Newbie@Example.test",
            "name": "New Bie",
            "role": "developer",
            "tier": "pro",
        },
    )
    assert sent.status_code == 303
    assert "newbie@example.test is invited" in " ".join(flashes(console.get("/console/users").text))
    again = console.post(
        "/console/users/invite",
        data={
            "csrf_token": csrf_token(page.text),
            "email": "newbie@example.test",
            "name": "Again",
            "role": "member",
            "tier": "basic",
        },
    )
    assert again.status_code == 303
    assert "already exists" in " ".join(flashes(console.get("/console/users").text))
    fresh()
    user = User.query.filter_by(email="newbie@example.test").one()
    assert (user.role, user.tier, user.email_verified) == ("developer", "pro", False)
    created = AuditEvent.query.filter_by(action="user.created").one()
    assert created.actor_id == admin.id and created.subject_id == user.id

    url = mailbox.wait_for("newbie@example.test").link()
    browser = Browser(live_server.url)
    form = browser.get(url)
    token = re.search(r'name="token" type="hidden" value="([^"]+)"', form.text).group(1)
    done = browser.post(
        "/invitation", data={"csrf_token": csrf_token(form.text), "token": token, "new": PASSWORD, "confirm": PASSWORD}
    )
    assert done.status_code == 303
    fresh()
    assert db.session.get(User, user.id).email_verified is True
