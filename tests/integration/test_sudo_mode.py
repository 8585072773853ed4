"""Sudo mode, over real HTTP: removing a passkey, turning off the authenticator app, new recovery
codes and a change of email address each ask the member to confirm it is them (the password, or a
fresh code from the authenticator app), then not again in that session for ten minutes. A sign-in
does not open the window; another session of the same member has its own. The confirmation page is
a plain form (no script) that carries the action's own fields along."""

from __future__ import annotations

import re
from html import unescape

import pyotp

from app.core.extensions import db
from app.models import AuditEvent, OneTimeLink, Passkey, RecoveryCode, TotpFactor
from tests.factories import PASSWORD, make_member
from tests.flows import Browser, csrf_token
from tests.integration.console_support import age_confirmation, alerts, flashes, fresh, signed_in

WINDOW = 600  # SUDO_MODE_LIFETIME's default: ten minutes


def give_passkeys(member, *names: str) -> list[int]:
    """Passkeys stored for `member` (after their sign-in: the ceremony is tested in test_passkeys)."""
    rows = [Passkey(user_id=member.id, credential_id=f"{member.id}-{n}", public_key=b"cose", name=n) for n in names]
    db.session.add_all(rows)
    db.session.commit()
    return [r.id for r in rows]


def passkey_count(member) -> int:
    fresh()
    return Passkey.query.filter_by(user_id=member.id).count()


def remove(browser: Browser, passkey_id: int, token: str, **proof):
    """The removal confirmation's button (the page that names the passkey was seen)."""
    return browser.post(
        f"/account/two-step/passkeys/{passkey_id}/remove", data={"csrf_token": token, "confirm": "yes", **proof}
    )


def test_removing_a_passkey_asks_to_confirm_it_is_the_member(live_server):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")  # a sign-in does not open the window
    [laptop] = give_passkeys(member, "Laptop")
    account = browser.get("/account")

    ask = remove(browser, laptop, csrf_token(account.text))
    assert ask.status_code == 200 and "Confirm it is you" in ask.text
    assert 'To remove the passkey "Laptop", type your password.' in unescape(ask.text)
    assert f'action="/account/two-step/passkeys/{laptop}/remove"' in ask.text and "<script" not in ask.text
    assert 'name="sudo_code"' not in ask.text  # no authenticator app: the password only
    assert passkey_count(member) == 1

    wrong = remove(browser, laptop, csrf_token(ask.text), current="not my password")
    assert wrong.status_code == 401 and "Your password is not right." in alerts(wrong.text)
    assert passkey_count(member) == 1
    removed = remove(browser, laptop, csrf_token(ask.text), current=PASSWORD)
    assert removed.status_code == 303
    assert 'The passkey "Laptop" is removed' in unescape(" ".join(flashes(browser.get("/account").text)))
    assert passkey_count(member) == 0
    assert AuditEvent.query.filter_by(action="2fa.removed", subject_id=member.id).one().detail["passkey"] == "Laptop"


def test_a_confirmation_lasts_ten_minutes_in_its_own_session(live_server):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    other_session = signed_in(live_server.url, member.email, "/account")  # signed in before the passkeys
    one, two, three = give_passkeys(member, "One", "Two", "Three")
    token = csrf_token(browser.get("/account").text)
    assert remove(browser, one, token, current=PASSWORD).status_code == 303

    age_confirmation(browser, WINDOW - 30)  # nine and a half minutes later: not asked again
    assert remove(browser, two, token).status_code == 303
    assert passkey_count(member) == 1
    other = remove(other_session, three, csrf_token(other_session.get("/account").text))
    assert other.status_code == 200 and "Confirm it is you" in other.text  # its own window is closed

    age_confirmation(browser, 31)  # past the ten minutes
    asked = remove(browser, three, token)
    assert asked.status_code == 200 and "Confirm it is you" in asked.text
    assert passkey_count(member) == 1

    # Signing in again closes the window too: the new session has not confirmed anything.
    assert remove(browser, three, csrf_token(asked.text), current=PASSWORD).status_code == 303
    again = signed_in(live_server.url, member.email, "/account")
    fresh()
    assert AuditEvent.query.filter_by(action="2fa.removed", subject_id=member.id).count() == 3
    [four] = give_passkeys(member, "Four")
    assert remove(again, four, csrf_token(again.get("/account").text)).status_code == 200


def enroll(live_server, member) -> tuple[Browser, str, list[str]]:
    browser = signed_in(live_server.url, member.email, "/account")
    page = browser.get("/account/two-step/setup")
    assert 'name="current"' in page.text  # the setup page asks in place while the window is closed
    secret = unescape(re.search(r'id="totp-secret">([^<]+)<', page.text).group(1)).replace(" ", "")
    done = browser.post(
        "/account/two-step/setup",
        data={"csrf_token": csrf_token(page.text), "current": PASSWORD, "code": pyotp.TOTP(secret).now()},
    )
    assert done.status_code == 200, alerts(done.text)
    return browser, secret, re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", done.text)


def next_code(member, secret: str) -> str:
    """A code the server has not seen yet (each 30-second step is accepted once)."""
    fresh()
    db.session.get(TotpFactor, member.id).last_used_step = None
    db.session.commit()
    return pyotp.TOTP(secret).now()


def test_a_fresh_code_from_the_authenticator_app_confirms_too(live_server):
    member = make_member()
    browser, secret, _codes = enroll(live_server, member)
    age_confirmation(browser, WINDOW + 1)
    account = browser.get("/account")
    ask = browser.post("/account/two-step/recovery-codes", data={"csrf_token": csrf_token(account.text)})
    assert ask.status_code == 200 and 'name="sudo_code"' in ask.text
    assert "type your password or a code from your authenticator app" in ask.text
    fresh()
    used = pyotp.TOTP(secret).at(db.session.get(TotpFactor, member.id).last_used_step * 30)  # the setup's: once
    replay = browser.post(
        "/account/two-step/recovery-codes", data={"csrf_token": csrf_token(ask.text), "sudo_code": used}
    )
    assert replay.status_code == 401
    renewed = browser.post(
        "/account/two-step/recovery-codes",
        data={"csrf_token": csrf_token(ask.text), "sudo_code": next_code(member, secret)},
    )
    assert renewed.status_code == 200 and "recovery-codes" in renewed.text
    fresh()
    assert RecoveryCode.query.filter_by(user_id=member.id).count() == 10
    # The window is open now: turning the app off does not ask again.
    off = browser.post("/account/two-step/remove", data={"csrf_token": csrf_token(account.text)})
    assert off.status_code == 303
    fresh()
    assert TotpFactor.query.filter_by(user_id=member.id).count() == 0


def test_a_session_cannot_turn_off_two_step_verification_without_the_proof(live_server):
    member = make_member()
    browser, _, _ = enroll(live_server, member)
    age_confirmation(browser, WINDOW + 1)
    token = csrf_token(browser.get("/account").text)
    for action in ("remove", "recovery-codes"):
        page = browser.post(f"/account/two-step/{action}", data={"csrf_token": token})
        assert page.status_code == 200 and "Confirm it is you" in page.text
        guessed = browser.post(f"/account/two-step/{action}", data={"csrf_token": token, "sudo_code": "123456"})
        assert guessed.status_code in (401, 429)
    fresh()
    assert TotpFactor.query.filter_by(user_id=member.id).count() == 1
    assert AuditEvent.query.filter_by(action="2fa.recovery_codes_renewed", subject_id=member.id).count() == 0


def test_the_email_change_asks_in_place_or_carries_its_address_through_the_confirmation(live_server, mailbox):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    page = browser.get("/account/email")
    assert 'name="current"' in page.text  # the window is closed: the form asks for the password
    new = "next-" + member.email
    # Sent without the proof (the window closed while the form was open): the confirmation page,
    # carrying the address in a hidden field, posts it back with the password.
    ask = browser.post("/account/email", data={"csrf_token": csrf_token(page.text), "email": new})
    assert ask.status_code == 200 and f"To change your email address to {new}, type your password." in ask.text
    assert f'<input type="hidden" name="email" value="{new}">' in ask.text
    fresh()
    assert OneTimeLink.query.filter_by(user_id=member.id).count() == 0
    done = browser.post("/account/email", data={"csrf_token": csrf_token(ask.text), "email": new, "current": PASSWORD})
    assert done.status_code == 303
    mailbox.wait_for(new)
    # Confirmed a moment ago: the form no longer asks.
    assert 'name="current"' not in browser.get("/account/email").text
    newer = "newer-" + member.email
    again = browser.post("/account/email", data={"csrf_token": csrf_token(page.text), "email": newer})
    assert again.status_code == 303
    mailbox.wait_for(newer)
