"""Two-step verification with an authenticator app (TOTP) and recovery codes, over real HTTP: set
up on the account page, asked after the password, `amr`/`acr` in the ID token, `acr_values`
asking for two factors, `prompt=login` asking both again, and removal."""

from __future__ import annotations

import base64
import json
import re
import time
from html import unescape

import pyotp

from app.core.extensions import db
from app.models import AuditEvent, RecoveryCode, TotpFactor
from app.models.base import sha256_hex
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, query
from tests.integration.console_support import age_confirmation, alerts, flashes, fresh, signed_in

MFA = "https://refeds.org/profile/mfa"
SFA = "https://refeds.org/profile/sfa"
SECOND_STEP = "/login/second-factor"


def claims(id_token: str) -> dict:
    payload = id_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def enroll(live_server, member) -> tuple[Browser, str, list[str]]:
    """Set up an authenticator app for `member`; returns their browser, the TOTP secret, the codes."""
    browser = signed_in(live_server.url, member.email, "/account")
    page = browser.get("/account/two-step/setup")
    assert page.status_code == 200
    secret = unescape(re.search(r'id="totp-secret">([^<]+)<', page.text).group(1)).replace(" ", "")
    assert f"otpauth://totp/Credits%20ID:{member.email.replace('@', '%40')}?secret={secret}" in unescape(page.text)
    done = browser.post(
        "/account/two-step/setup",
        data={"csrf_token": csrf_token(page.text), "current": PASSWORD, "code": pyotp.TOTP(secret).now()},
    )
    assert done.status_code == 200, alerts(done.text)
    codes = re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", done.text)
    assert len(codes) == 10
    return browser, secret, codes


def code_at(secret: str, steps_ahead: int) -> str:
    """A valid code not used yet: the server accepts one step of drift, and each step once."""
    return pyotp.TOTP(secret).at(int(time.time()) + 30 * steps_ahead)


def later_code(member, secret: str) -> str:
    """A code as if from a later 30-second step: each step's code is accepted once, so the record
    of the last used step is cleared first (instead of waiting for the clock)."""
    fresh()
    db.session.get(TotpFactor, member.id).last_used_step = None
    db.session.commit()
    return pyotp.TOTP(secret).now()


def sign_in_to_app(live_server, member, second: str | None, rp=None, browser=None, **extra):
    """Authorize -> password -> (second step) -> code at the app; returns (ID token claims, browser, rp)."""
    if rp is None:
        client, secret = make_client(trusted=True)
        rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = browser or Browser(live_server.url)
    response = browser.authorize(rp.auth_params(scope="openid offline_access", **extra))
    if 'type="password"' in response.text:
        response = browser.login(member.email)
    if response.status_code == 200 and 'autocomplete="one-time-code"' in response.text:
        assert second is not None, "the second step was asked"
        response = browser.follow(
            browser.post(SECOND_STEP, data={"csrf_token": csrf_token(response.text), "code": second})
        )
    assert response.status_code == 302, response.text[:400]
    body = rp.exchange(query(response.headers["Location"])["code"]).json()
    return claims(body["id_token"]), browser, rp, body


def test_setting_up_an_authenticator_app_stores_only_sealed_and_hashed_secrets(live_server, mailbox):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    assert "Two-step verification: off" in browser.get("/account").text
    page = browser.get("/account/two-step/setup")
    secret = unescape(re.search(r'id="totp-secret">([^<]+)<', page.text).group(1)).replace(" ", "")
    bad_password = browser.post(
        "/account/two-step/setup",
        data={"csrf_token": csrf_token(page.text), "current": "not my password", "code": pyotp.TOTP(secret).now()},
    )
    assert bad_password.status_code == 401 and "Confirm it is you" in bad_password.text
    wrong = browser.post(
        "/account/two-step/setup",
        data={
            "csrf_token": csrf_token(page.text),
            "current": PASSWORD,
            "code": "000000" if pyotp.TOTP(secret).now() != "000000" else "111111",
        },
    )
    assert wrong.status_code == 400 and "That code is not right" in alerts(wrong.text)
    assert 'name="current"' not in wrong.text  # confirmed a moment ago: the password is not asked again
    fresh()
    assert TotpFactor.query.filter_by(user_id=member.id).one().confirmed_at is None  # not on yet

    done = browser.post(
        "/account/two-step/setup",
        data={"csrf_token": csrf_token(page.text), "current": PASSWORD, "code": pyotp.TOTP(secret).now()},
    )
    assert done.status_code == 200 and "Two-step verification is on" in done.text
    codes = re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", done.text)
    assert len(codes) == 10 and len(set(codes)) == 10
    account = browser.get("/account").text
    assert "Two-step verification: on" in account and "10 recovery codes left" in account
    fresh()
    factor = TotpFactor.query.filter_by(user_id=member.id).one()
    assert factor.confirmed_at is not None and secret.encode() not in factor.secret_sealed
    stored = {r.code_hash for r in RecoveryCode.query.filter_by(user_id=member.id)}
    assert stored == {sha256_hex(c.replace("-", "")) for c in codes}
    assert AuditEvent.query.filter_by(action="2fa.enrolled", subject_id=member.id).count() == 1
    notice = mailbox.wait_for(member.email)
    assert "two-step verification with an authenticator app was turned on" in notice.subject
    assert secret not in notice.text and not any(c in notice.text for c in codes)


def test_sign_in_asks_for_the_code_and_the_id_token_says_two_factors(live_server):
    member = make_member()
    _, secret, _ = enroll(live_server, member)
    client, client_secret = make_client(trusted=True)
    rp = RelyingParty(live_server.url, client.client_id, client_secret)
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params(scope="openid"))
    second = browser.login(member.email)
    assert second.status_code == 200 and second.url.endswith(SECOND_STEP)
    assert browser.get("/account").status_code == 302  # not signed in before the code
    wrong = browser.post(SECOND_STEP, data={"csrf_token": csrf_token(second.text), "code": "12345x"})
    assert wrong.status_code == 401 and "That code is not right" in alerts(wrong.text)
    code = code_at(secret, 1)
    done = browser.follow(browser.post(SECOND_STEP, data={"csrf_token": csrf_token(second.text), "code": code}))
    assert done.status_code == 302
    body = rp.exchange(query(done.headers["Location"])["code"]).json()
    assert claims(body["id_token"])["amr"] == ["pwd", "otp"] and claims(body["id_token"])["acr"] == MFA

    # The same code is accepted once: a second sign-in with it fails.
    other = Browser(live_server.url)
    other.authorize(rp.auth_params(scope="openid"))
    page = other.login(member.email)
    replay = other.post(SECOND_STEP, data={"csrf_token": csrf_token(page.text), "code": code})
    assert replay.status_code == 401
    fresh()
    assert AuditEvent.query.filter_by(action="2fa.failed", subject_id=member.id).count() == 2


def test_a_recovery_code_works_once_and_refresh_keeps_amr(live_server):
    member = make_member()
    _, _, codes = enroll(live_server, member)
    token_claims, browser, rp, body = sign_in_to_app(live_server, member, codes[0].upper().replace("-", " "))
    assert token_claims["amr"] == ["pwd", "otp"]
    assert "9 left" in " ".join(flashes(browser.get("/account").text))
    refreshed = rp.refresh(body["refresh_token"]).json()
    assert claims(refreshed["id_token"])["amr"] == ["pwd", "otp"] and claims(refreshed["id_token"])["acr"] == MFA
    again = Browser(live_server.url)
    again.authorize(rp.auth_params(scope="openid"))
    page = again.login(member.email)
    assert again.post(SECOND_STEP, data={"csrf_token": csrf_token(page.text), "code": codes[0]}).status_code == 401
    fresh()
    assert AuditEvent.query.filter_by(action="2fa.recovery_code_used").one().detail == {"left": 9}


def test_one_factor_sign_ins_say_so_and_acr_values_asks_for_the_second(live_server):
    plain = make_member()
    token_claims, *_ = sign_in_to_app(live_server, plain, None)
    assert token_claims["amr"] == ["pwd"] and token_claims["acr"] == SFA
    # A member without a second factor cannot give one: the request goes on, and acr says so.
    token_claims, *_ = sign_in_to_app(live_server, plain, None, acr_values=MFA)
    assert token_claims["acr"] == SFA

    member = make_member()
    browser, secret, _ = enroll(live_server, member)  # this browser signed in with the password only
    client, client_secret = make_client(trusted=True)
    rp = RelyingParty(live_server.url, client.client_id, client_secret)
    token_claims, *_ = sign_in_to_app(live_server, member, None, rp=rp, browser=browser)
    assert token_claims["acr"] == SFA  # single sign-on with the session as it was made
    token_claims, *_ = sign_in_to_app(
        live_server, member, later_code(member, secret), rp=rp, browser=browser, acr_values=f"{MFA} {SFA}"
    )
    assert token_claims["acr"] == MFA and token_claims["amr"] == ["pwd", "otp"]
    # Now the session has two factors: acr_values is met by single sign-on.
    token_claims, *_ = sign_in_to_app(live_server, member, None, rp=rp, browser=browser, acr_values=MFA)
    assert token_claims["acr"] == MFA
    # prompt=login and max_age ask for both factors again.
    token_claims, *_ = sign_in_to_app(
        live_server, member, later_code(member, secret), rp=rp, browser=browser, prompt="login"
    )
    assert token_claims["amr"] == ["pwd", "otp"]
    token_claims, *_ = sign_in_to_app(
        live_server, member, later_code(member, secret), rp=rp, browser=browser, max_age="0"
    )
    assert token_claims["amr"] == ["pwd", "otp"]


def test_discovery_names_the_assurance_levels(live_server):
    doc = Browser(live_server.url).get("/.well-known/openid-configuration").json()
    assert doc["acr_values_supported"] == [SFA, MFA] and {"amr", "acr"} <= set(doc["claims_supported"])


def test_turning_it_off_and_new_recovery_codes_need_the_password(live_server):
    member = make_member()
    browser, secret, codes = enroll(live_server, member)
    age_confirmation(browser, 601)  # the setup's confirmation is past its ten minutes
    account = browser.get("/account")
    ask = browser.post("/account/two-step/recovery-codes", data={"csrf_token": csrf_token(account.text)})
    assert ask.status_code == 200 and 'autocomplete="current-password"' in ask.text
    assert "Confirm it is you" in ask.text and 'name="sudo_code"' in ask.text  # or a code from the app
    renewed = browser.post(
        "/account/two-step/recovery-codes", data={"csrf_token": csrf_token(ask.text), "current": PASSWORD}
    )
    new_codes = re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", renewed.text)
    assert len(new_codes) == 10 and not set(new_codes) & set(codes)
    fresh()
    assert RecoveryCode.query.filter_by(user_id=member.id).count() == 10

    age_confirmation(browser, 601)
    ask = browser.post("/account/two-step/remove", data={"csrf_token": csrf_token(account.text)})
    wrong = browser.post("/account/two-step/remove", data={"csrf_token": csrf_token(ask.text), "current": "nope nope"})
    assert wrong.status_code == 401
    wrong_code = "000000" if pyotp.TOTP(secret).now() != "000000" else "111111"
    wrong = browser.post("/account/two-step/remove", data={"csrf_token": csrf_token(ask.text), "sudo_code": wrong_code})
    assert wrong.status_code == 401 and "That is not right" in alerts(wrong.text)
    recovery = browser.post(
        "/account/two-step/remove", data={"csrf_token": csrf_token(ask.text), "sudo_code": new_codes[0]}
    )
    assert recovery.status_code == 400  # a recovery code signs in; it does not confirm (and is not used up)
    fresh()
    assert TotpFactor.query.filter_by(user_id=member.id).count() == 1
    assert RecoveryCode.query.filter_by(user_id=member.id, used_at=None).count() == 10
    off = browser.post(
        "/account/two-step/remove", data={"csrf_token": csrf_token(ask.text), "sudo_code": later_code(member, secret)}
    )
    assert off.status_code == 303
    assert "Two-step verification: off" in browser.get("/account").text
    fresh()
    assert TotpFactor.query.filter_by(user_id=member.id).count() == 0
    assert RecoveryCode.query.filter_by(user_id=member.id).count() == 0
    token_claims, *_ = sign_in_to_app(live_server, member, None)  # the password alone again
    assert token_claims["amr"] == ["pwd"]
    actions = {e.action for e in AuditEvent.query.filter_by(subject_id=member.id)}
    assert {"2fa.enrolled", "2fa.recovery_codes_renewed", "2fa.removed"} <= actions


def test_the_second_step_needs_a_right_password_first_and_is_throttled(live_server):
    assert Browser(live_server.url).get(SECOND_STEP).headers["Location"] == "/login"
    member = make_member()
    enroll(live_server, member)
    browser = Browser(live_server.url)
    page = browser.get("/login")
    step = browser.follow(
        browser.post("/login", data={"csrf_token": csrf_token(page.text), "email": member.email, "password": PASSWORD})
    )
    statuses = [
        browser.post(SECOND_STEP, data={"csrf_token": csrf_token(step.text), "code": f"{i:06d}x"}).status_code
        for i in range(8)
    ]
    assert statuses[:6] == [401] * 6 and 429 in statuses[6:]


def test_support_turns_it_off_on_the_command_line(app, live_server):
    member = make_member()
    enroll(live_server, member)
    result = app.test_cli_runner().invoke(args=["users", "remove-second-factor", member.email, "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["removed"] is True
    assert json.loads(result.output)["passkeys_removed"] == 0
    fresh()
    event = AuditEvent.query.filter_by(action="2fa.removed").one()
    assert event.source == "cli" and event.actor_id is None and event.subject_id == member.id
    token_claims, *_ = sign_in_to_app(live_server, member, None)
    assert token_claims["amr"] == ["pwd"]


def test_a_recovery_code_has_its_own_step_and_a_used_app_code_is_named(live_server):
    member = make_member()
    _, secret, codes = enroll(live_server, member)
    browser = Browser(live_server.url)
    page = browser.get("/login")
    step = browser.follow(
        browser.post("/login", data={"csrf_token": csrf_token(page.text), "email": member.email, "password": PASSWORD})
    )
    assert 'inputmode="numeric"' in step.text and 'href="/login/second-factor/recovery"' in step.text
    # The set-up's code used its 30-second step: the same code again is "just used", not wrong.
    reused = browser.post(SECOND_STEP, data={"csrf_token": csrf_token(step.text), "code": pyotp.TOTP(secret).now()})
    assert reused.status_code == 401
    assert "That code was just used" in alerts(reused.text)
    recovery = browser.get(SECOND_STEP + "/recovery")
    assert 'inputmode="text"' in recovery.text and 'inputmode="numeric"' not in recovery.text
    # A code from the app is not a recovery code: the recovery step takes recovery codes only.
    wrong = browser.post(
        SECOND_STEP + "/recovery", data={"csrf_token": csrf_token(recovery.text), "code": code_at(secret, 1)}
    )
    assert wrong.status_code == 401 and "That recovery code is not right" in alerts(wrong.text)
    done = browser.post(SECOND_STEP + "/recovery", data={"csrf_token": csrf_token(recovery.text), "code": codes[1]})
    assert done.status_code == 302
    fresh()
    assert AuditEvent.query.filter_by(action="2fa.failed", subject_id=member.id).count() == 2
    assert AuditEvent.query.filter_by(action="2fa.recovery_code_used", subject_id=member.id).count() == 1
