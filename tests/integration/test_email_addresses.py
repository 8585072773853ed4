"""Email addresses where people type them (issue 49, item 12), over real HTTP and SMTP: the console's
invitation, the account's change of address and the forgot-password form refuse what no SMTP
server delivers to as typed, saying why; an internationalized domain is stored as its A-label and
the mail goes to exactly the stored address."""

from __future__ import annotations

from html import unescape

import pytest

from app.core.extensions import db
from app.models import OneTimeLink, User
from tests.factories import PASSWORD, make_member
from tests.flows import Browser, csrf_token
from tests.integration.console_support import flashes, fresh, signed_in

REFUSED = {
    "Ana <ana@example.test>": "angle brackets",
    "ana,bob@example.test": "invalid characters",
    '"ana"@example.test': "Quoting",
    "ana(x)@example.test": "invalid characters",
    "ana bob@example.test": "invalid characters",
    "ana@printer.local": "special-use or reserved",
}
IDNA = "Zoë@Bücher.example"
IDNA_OK, STORED_OK = "Zoe@Bücher.example", "zoe@xn--bcher-kva.example"


def invite(console: Browser, email: str):
    page = console.get("/console/users")
    return console.post(
        "/console/users/invite",
        data={"csrf_token": csrf_token(page.text), "email": email, "name": "New", "role": "member", "tier": "basic"},
    )


def test_the_console_invites_only_deliverable_addresses_and_mails_the_stored_one(live_server, mailbox):
    admin = make_member(role="admin")
    console = signed_in(live_server.url, admin.email, "/console/users")
    for typed, reason in {**REFUSED, IDNA: "Internationalized characters before the @-sign"}.items():
        assert invite(console, typed).status_code == 303
        shown = " ".join(flashes(console.get("/console/users").text))
        assert "Not a valid email address" in shown and reason in shown, (typed, shown)
    fresh()
    assert User.query.count() == 1  # the admin alone

    assert invite(console, IDNA_OK).status_code == 303
    assert f"{STORED_OK} is invited" in " ".join(flashes(console.get("/console/users").text))
    fresh()
    assert User.query.filter_by(email=STORED_OK).count() == 1
    mail = mailbox.wait_for(STORED_OK)
    assert mail.envelope_to == [STORED_OK] and mail.to == STORED_OK


def change_email(browser: Browser, email: str):
    page = browser.get("/account/email")
    return browser.post(
        "/account/email", data={"csrf_token": csrf_token(page.text), "email": email, "current": PASSWORD}
    )


@pytest.mark.parametrize(("typed", "reason"), REFUSED.items())
def test_the_account_refuses_a_new_address_no_server_delivers_to(live_server, mailbox, typed, reason):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    refused = change_email(browser, typed)
    assert refused.status_code == 400
    assert "Not a valid email address" in unescape(refused.text) and reason in unescape(refused.text)
    fresh()
    assert OneTimeLink.query.filter_by(user_id=member.id).count() == 0


def test_a_new_idna_address_is_mailed_and_stored_as_its_a_label(live_server, mailbox):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    assert change_email(browser, IDNA_OK).status_code == 303
    mail = mailbox.wait_for(STORED_OK)
    assert mail.envelope_to == [STORED_OK] and mail.to == STORED_OK
    fresh()
    [link] = OneTimeLink.query.filter_by(user_id=member.id, purpose="verify").all()
    assert link.email == STORED_OK
    page = browser.get(mail.link())
    token = page.text.split('name="token" type="hidden" value="')[1].split('"')[0]
    assert browser.post("/email/verify", data={"csrf_token": csrf_token(page.text), "token": token}).status_code == 303
    fresh()
    assert db.session.get(User, member.id).email == STORED_OK
    # Typed either way, the address signs in.
    assert signed_in(live_server.url, IDNA_OK, "/account").get("/account").status_code == 200


def test_forgot_password_says_when_an_address_cannot_be_one_and_finds_an_idna_member(live_server, mailbox):
    make_member(email=STORED_OK)
    browser = Browser(live_server.url)
    page = browser.get("/password/forgot")
    refused = browser.post(
        "/password/forgot", data={"csrf_token": csrf_token(page.text), "email": "ana,bob@example.test"}
    )
    assert refused.status_code == 400 and "invalid characters" in unescape(refused.text)
    sent = browser.post("/password/forgot", data={"csrf_token": csrf_token(page.text), "email": "ZOE@bücher.example"})
    assert sent.status_code == 200
    mail = mailbox.wait_for(STORED_OK)
    assert mail.subject == "Reset your Credits ID password" and mail.envelope_to == [STORED_OK]
