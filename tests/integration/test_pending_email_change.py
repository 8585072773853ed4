"""What a member does to take their account back ends every mailed link that could take it away
again, over real HTTP and SMTP:

- a pending change of address (its link not yet opened) is shown on the account page, which can
  cancel it, and the current address is told when it is asked for; a password reset, a password
  change (with or without disconnecting every app) and "sign out everywhere" each void its link;
- a reset link is bound to the address it was sent to: a completed change of address or a password
  change voids it, and a link to an address the account has left never works."""

from __future__ import annotations

import re

import pytest

from app.core.extensions import db
from app.models import AuditEvent, LinkPurpose, OneTimeLink, User
from app.models.base import sha256_hex
from tests.factories import PASSWORD, make_member
from tests.flows import Browser, csrf_token
from tests.integration.console_support import flashes, fresh, signed_in
from tests.integration.test_password_reset import ask_for_link, set_new_password

NEW_PASSWORD = "a password only the member knows"


def ask_for_change(browser: Browser, new: str) -> None:
    """The account page's change of address, confirmed with the password."""
    page = browser.get("/account/email")
    asked = browser.post(
        "/account/email", data={"csrf_token": csrf_token(page.text), "email": new, "current": PASSWORD}
    )
    assert asked.status_code == 303, asked.text[:300]


def open_change_link(browser: Browser, url: str):
    """Open a verification link and press its button; returns the answer to the press (or to the GET
    when the link is refused at once)."""
    page = browser.get(url)
    if page.status_code != 200:
        return page
    token = re.search(r'name="token" type="hidden" value="([^"]+)"', page.text).group(1)
    return browser.post("/email/verify", data={"csrf_token": csrf_token(page.text), "token": token})


def pending_change(live_server, mailbox, member) -> tuple[Browser, str, str]:
    """Someone signed in as `member` asks to move the account to their own address; returns their
    browser, that address and the link mailed to it."""
    intruder = signed_in(live_server.url, member.email, "/account")
    new = "intruder-" + member.email
    ask_for_change(intruder, new)
    return intruder, new, mailbox.wait_for(new).link()


def change_password(browser: Browser, **extra):
    page = browser.get("/account/password")
    return browser.post(
        "/account/password",
        data={
            "csrf_token": csrf_token(page.text),
            "current": PASSWORD,
            "new": NEW_PASSWORD,
            "confirm": NEW_PASSWORD,
            **extra,
        },
    )


def assert_change_voided(live_server, member, new: str, url: str) -> None:
    refused = open_change_link(Browser(live_server.url), url)
    assert refused.status_code == 400, refused.text[:300]
    fresh()
    user = db.session.get(User, member.id)
    assert user.email == member.email
    assert OneTimeLink.query.filter_by(user_id=member.id, purpose=LinkPurpose.VERIFY, used_at=None).count() == 0
    assert db.session.scalar(db.select(User.id).where(User.email == new)) is None


def test_the_account_page_shows_a_pending_change_and_cancels_it(live_server, mailbox):
    member = make_member()
    browser, new, url = pending_change(live_server, mailbox, member)
    told = mailbox.wait_for(member.email, subject="security notice")
    assert f"A change of your email address to {new} was asked for" in told.text
    assert told.links() == [f"{live_server.url}/password/forgot", f"{live_server.url}/account"]  # none that acts
    account = browser.get("/account").text
    fresh()
    asked_at = OneTimeLink.query.filter_by(user_id=member.id, purpose=LinkPurpose.VERIFY).one().created_at
    assert f"A change to <strong>{new}</strong> was asked for" in account
    assert f'<time datetime="{asked_at.isoformat()}" title="{asked_at.strftime("%Y-%m-%d %H:%M:%S UTC")}"' in account
    assert f'data-local="datetime">{asked_at.strftime("%Y-%m-%d %H:%M UTC")}</time>' in account
    assert 'action="/account/email/cancel"' in account

    no_token = browser.post("/account/email/cancel", data={})
    assert no_token.status_code == 400  # a form of this site only
    cancelled = browser.post("/account/email/cancel", data={"csrf_token": csrf_token(account)})
    assert cancelled.status_code == 303
    account = browser.get("/account").text
    assert f"The change of address is cancelled: the link no longer works, and your address stays {member.email}." in (
        " ".join(flashes(account))
    )
    assert "was asked for" not in account and 'action="/account/email/cancel"' not in account
    assert_change_voided(live_server, member, new, url)
    event = AuditEvent.query.filter_by(action="email.change_cancelled", subject_id=member.id).one()
    assert event.actor_id == member.id and event.detail == {"new_email": new}
    again = browser.post("/account/email/cancel", data={"csrf_token": csrf_token(account)})
    assert again.status_code == 303 and "No change of address was waiting." in " ".join(
        flashes(browser.get("/account").text)
    )


def test_a_verification_link_for_the_current_address_is_not_a_pending_change(live_server, mailbox):
    member = make_member(verified=False)
    browser = signed_in(live_server.url, member.email, "/account")
    account = browser.get("/account")
    browser.post("/account/email/verify", data={"csrf_token": csrf_token(account.text)})
    mailbox.wait_for(member.email)
    assert "was asked for" not in browser.get("/account").text
    browser.post("/account/sign-out-everywhere", data={"csrf_token": csrf_token(account.text)})
    fresh()
    assert OneTimeLink.query.filter_by(user_id=member.id, purpose=LinkPurpose.VERIFY, used_at=None).count() == 1


def test_a_password_reset_voids_a_pending_change(live_server, mailbox):
    member = make_member()
    _, new, url = pending_change(live_server, mailbox, member)
    ask_for_link(live_server, member.email)
    reset_url = mailbox.wait_for(member.email, subject="Reset your")
    browser = Browser(live_server.url)
    assert set_new_password(browser, reset_url.link()).status_code == 303
    assert_change_voided(live_server, member, new, url)
    assert f"the change of your address to {new} is cancelled" in " ".join(flashes(browser.get("/login").text))
    reset = AuditEvent.query.filter_by(action="password.reset_completed", subject_id=member.id).one()
    assert reset.detail["email_change_cancelled"] == new


@pytest.mark.parametrize("disconnect", [False, True], ids=["password-change", "password-change-and-disconnect-apps"])
def test_a_password_change_voids_a_pending_change(live_server, mailbox, disconnect):
    member = make_member()
    _, new, url = pending_change(live_server, mailbox, member)
    own = signed_in(live_server.url, member.email, "/account")
    changed = change_password(own, **({"disconnect_apps": "y"} if disconnect else {}))
    assert changed.status_code == 303
    assert_change_voided(live_server, member, new, url)
    assert f"the change of your address to {new} is cancelled" in " ".join(flashes(own.get("/account").text))


def test_signing_out_everywhere_voids_a_pending_change(live_server, mailbox):
    member = make_member()
    _, new, url = pending_change(live_server, mailbox, member)
    own = signed_in(live_server.url, member.email, "/account")
    done = own.post("/account/sign-out-everywhere", data={"csrf_token": csrf_token(own.get("/account").text)})
    assert done.status_code == 303
    assert_change_voided(live_server, member, new, url)
    assert f"and the change of your address to {new} is cancelled" in " ".join(flashes(own.get("/login").text))
    assert AuditEvent.query.filter_by(action="email.change_cancelled", subject_id=member.id).count() == 1


# -- a reset link is bound to the address it was sent to ---------------------------------------


def test_a_completed_change_of_address_voids_the_reset_link_sent_to_the_old_one(live_server, mailbox):
    member = make_member()
    ask_for_link(live_server, member.email)
    reset_url = mailbox.wait_for(member.email, subject="Reset your").link()
    browser = signed_in(live_server.url, member.email, "/account")
    new = "moved-" + member.email
    ask_for_change(browser, new)
    assert open_change_link(browser, mailbox.wait_for(new).link()).status_code == 303
    fresh()
    assert db.session.get(User, member.id).email == new

    refused = Browser(live_server.url).get(reset_url)
    assert refused.status_code == 400
    fresh()
    assert OneTimeLink.query.filter_by(user_id=member.id, purpose=LinkPurpose.RESET, used_at=None).count() == 0


def test_a_password_change_voids_an_unused_reset_link(live_server, mailbox):
    member = make_member()
    ask_for_link(live_server, member.email)
    reset_url = mailbox.wait_for(member.email, subject="Reset your").link()
    own = signed_in(live_server.url, member.email, "/account")
    assert change_password(own).status_code == 303
    assert Browser(live_server.url).get(reset_url).status_code == 400


def test_a_reset_link_to_an_address_the_account_has_left_never_works(live_server, mailbox):
    """Even a link row that escaped being voided (made before this rule, say) does not work once the
    member's address is another: the page checks the address it was sent to."""
    member = make_member()
    old = member.email
    ask_for_link(live_server, old)
    mail = mailbox.wait_for(old, subject="Reset your")
    fresh()
    user = db.session.get(User, member.id)
    user.email = "elsewhere-" + old  # as if changed by a path that voided nothing
    db.session.commit()
    link = OneTimeLink.query.filter_by(token_hash=sha256_hex(mail.token())).one()
    assert link.used_at is None and link.email == old
    browser = Browser(live_server.url)
    assert browser.get(mail.link()).status_code == 400
    page = browser.get("/password/forgot")
    forced = browser.post(
        "/password/reset",
        data={"csrf_token": csrf_token(page.text), "token": mail.token(), "new": "x" * 12, "confirm": "x" * 12},
    )
    assert forced.status_code == 400
    fresh()
    assert OneTimeLink.query.filter_by(token_hash=sha256_hex(mail.token())).one().used_at is None
