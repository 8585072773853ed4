"""Passkeys over real HTTP, answered by a software authenticator (tests/soft_authenticator.py):
registered on the account page, a sign-in without password, the second step after the password,
and the refusals (replay, another member's passkey, no user verification, another origin, a
challenge used or expired, an answer naming another member, a count that did not grow)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import timedelta
from html import unescape

from app.core.extensions import db
from app.models import AuditEvent, LoginSession, Passkey, RecoveryCode, WebauthnChallenge
from app.models.base import utcnow
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, hidden, query
from tests.integration.console_support import age_confirmation, alerts, flashes, fresh, signed_in
from tests.soft_authenticator import SoftAuthenticator, unb64url

MFA = "https://refeds.org/profile/mfa"


def claims(id_token: str) -> dict:
    payload = id_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def options_on(html: str) -> dict:
    return json.loads(unescape(re.search(r'data-options="([^"]+)"', html).group(1)))


def add_passkey(
    live_server, member, name: str = "Laptop", codes: list | None = None, counting: bool = True, origin: str = ""
) -> tuple[Browser, SoftAuthenticator]:
    """Add a passkey through the account pages; the first second factor also shows recovery codes
    (appended to `codes` when given). `counting`: see SoftAuthenticator.create; `origin`: the
    issuer's, when the server answers on another address than its issuer's."""
    browser = signed_in(live_server.url, member.email, "/account")
    account = browser.get("/account")
    # On this issuer (an IP address, which browsers refuse as relying-party id) the page does not
    # offer passkeys; the ceremony itself is the same (the real-browser test uses localhost).
    assert "Add a passkey" not in account.text and "not an IP address" in account.text
    ask = browser.post("/account/two-step/passkeys/new", data={"csrf_token": csrf_token(account.text)})
    assert ask.status_code == 200 and 'autocomplete="current-password"' in ask.text
    create = browser.post(
        "/account/two-step/passkeys/new", data={"csrf_token": csrf_token(ask.text), "name": name, "current": PASSWORD}
    )
    assert create.status_code == 200 and 'data-webauthn="create"' in create.text, alerts(create.text)
    options = options_on(create.text)
    assert options["rp"]["id"] == "127.0.0.1" and options["authenticatorSelection"]["residentKey"] == "required"
    authenticator = SoftAuthenticator(origin or live_server.url)
    done = browser.post(
        "/account/two-step/passkeys",
        data={
            "csrf_token": csrf_token(create.text),
            "name": name,
            "credential": authenticator.create(options, counting=counting),
        },
    )
    assert done.status_code == 200 and f'Passkey "{name}" added' in done.text
    shown = re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", done.text)
    assert len(shown) == 10  # the first second factor: recovery codes for a lost device
    if codes is not None:
        codes.extend(shown)
    return browser, authenticator


def app_and_browser(live_server):
    client, secret = make_client(trusted=True)
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = Browser(live_server.url)
    login = browser.authorize(rp.auth_params(scope="openid offline_access"))
    assert 'type="password"' in login.text
    return rp, browser, login


def passwordless(browser: Browser, login, authenticator: SoftAuthenticator, **get_kw):
    page = browser.post(
        "/login/passkey",
        data={"csrf_token": csrf_token(login.text), "interaction": hidden(login.text, "interaction") or ""},
    )
    assert page.status_code == 200 and 'data-webauthn="get"' in page.text
    options = options_on(page.text)
    assert options["userVerification"] == "required" and not options.get("allowCredentials")
    answer = authenticator.get(options, **get_kw)
    return (
        browser.follow(
            browser.post(
                "/login/passkey",
                data={
                    "csrf_token": csrf_token(page.text),
                    "interaction": hidden(page.text, "interaction") or "",
                    "credential": answer,
                },
            )
        ),
        answer,
        page,
    )


def test_a_member_adds_a_passkey_and_signs_in_with_it_alone(live_server):
    member = make_member()
    _, authenticator = add_passkey(live_server, member)
    fresh()
    [row] = Passkey.query.filter_by(user_id=member.id).all()
    assert row.name == "Laptop" and row.public_key and row.sign_count == 0
    assert AuditEvent.query.filter_by(action="2fa.enrolled").one().detail == {"kind": "passkey", "passkey": "Laptop"}

    rp, browser, login = app_and_browser(live_server)
    assert "Sign in with a passkey" not in login.text  # an IP-address issuer (see add_passkey)
    callback, answer, _page = passwordless(browser, login, authenticator)
    assert callback.status_code == 302, alerts(callback.text)
    token = claims(rp.exchange(query(callback.headers["Location"])["code"]).json()["id_token"])
    assert token["sub"] == member.sub and token["amr"] == ["hwk"] and token["acr"] == MFA
    fresh()
    assert db.session.get(Passkey, row.id).sign_count == 1 and db.session.get(Passkey, row.id).last_used_at

    # The same answer again: its challenge was used up.
    replay = browser.post(
        "/login/passkey", data={"csrf_token": csrf_token(browser.get("/login").text), "credential": answer}
    )
    assert replay.status_code == 401 and "expired" in alerts(replay.text)


def test_a_passkey_without_user_verification_or_from_another_origin_is_refused(live_server):
    member = make_member()
    _, authenticator = add_passkey(live_server, member)
    _, browser, login = app_and_browser(live_server)
    refused, _, _ = passwordless(browser, login, authenticator, user_verified=False)
    assert refused.status_code == 401 and "could not be checked" in alerts(refused.text)
    elsewhere = SoftAuthenticator("https://evil.example")
    elsewhere.credentials = authenticator.credentials
    _, browser, login = app_and_browser(live_server)
    refused, _, _ = passwordless(browser, login, elsewhere)
    assert refused.status_code == 401


def test_a_passkey_is_the_second_step_after_the_password(live_server):
    member, other = make_member(), make_member()
    _, authenticator = add_passkey(live_server, member)
    _, other_authenticator = add_passkey(live_server, other)
    rp, browser, _login = app_and_browser(live_server)
    step = browser.login(member.email)
    assert step.url.endswith("/login/second-factor") and "Use a passkey" in step.text
    assert "Use a recovery code" in step.text and "Lost your passkey?" in step.text  # no app: codes only
    assert 'name="code"' not in step.text  # the recovery code has a step of its own (a text keyboard)
    options = options_on(step.text)
    allowed = [c["id"] for c in options["allowCredentials"]]
    assert len(allowed) == 1
    # Another member's passkey does not pass for this one.
    wrong = browser.post(
        "/login/second-factor/passkey",
        data={
            "csrf_token": csrf_token(step.text),
            "credential": other_authenticator.get({"challenge": options["challenge"]}),
        },
    )
    assert wrong.status_code == 401 and "not registered for this account" in alerts(wrong.text)
    options = options_on(wrong.text)  # a fresh challenge
    done = browser.follow(
        browser.post(
            "/login/second-factor/passkey",
            data={"csrf_token": csrf_token(wrong.text), "credential": authenticator.get(options)},
        )
    )
    assert done.status_code == 302
    token = claims(rp.exchange(query(done.headers["Location"])["code"]).json()["id_token"])
    assert token["amr"] == ["pwd", "hwk"] and token["acr"] == MFA


def test_removing_the_passkey(live_server):
    member = make_member()
    browser, authenticator = add_passkey(live_server, member)
    fresh()
    passkey_id = Passkey.query.filter_by(user_id=member.id).one().id
    account = browser.get("/account")
    assert "Laptop" in account.text
    other = make_member()
    intruder = signed_in(live_server.url, other.email, "/account")
    refused = intruder.post(
        f"/account/two-step/passkeys/{passkey_id}/remove",
        data={"csrf_token": csrf_token(intruder.get("/account").text)},
    )
    assert refused.status_code == 303
    fresh()
    assert Passkey.query.filter_by(user_id=member.id).count() == 1
    asked = browser.post(
        f"/account/two-step/passkeys/{passkey_id}/remove", data={"csrf_token": csrf_token(account.text)}
    )
    assert asked.status_code == 200 and "Remove the passkey “Laptop”?" in asked.text  # never in one click
    fresh()
    assert Passkey.query.count() == 1
    removed = browser.post(
        f"/account/two-step/passkeys/{passkey_id}/remove",
        data={"csrf_token": csrf_token(asked.text), "confirm": "yes"},
    )
    assert removed.status_code == 303
    fresh()
    assert Passkey.query.count() == 0
    _, browser, login = app_and_browser(live_server)
    refused, _, _ = passwordless(browser, login, authenticator)
    assert refused.status_code == 401
    _, browser, _ = app_and_browser(live_server)
    assert browser.login(member.email).status_code == 302  # the password alone again


def test_a_member_whose_only_second_factor_is_a_lost_passkey_uses_a_recovery_code(live_server):
    member = make_member()
    codes: list[str] = []
    browser, _ = add_passkey(live_server, member, codes=codes)
    assert "Two-step verification: on" in browser.get("/account").text
    rp, stranger, _ = app_and_browser(live_server)
    step = stranger.login(member.email)
    assert "Lost your passkey?" in step.text and 'href="/login/second-factor/recovery"' in step.text
    recovery = stranger.get("/login/second-factor/recovery")
    assert 'name="code"' in recovery.text and 'inputmode="text"' in recovery.text
    done = stranger.follow(
        stranger.post("/login/second-factor/recovery", data={"csrf_token": csrf_token(recovery.text), "code": codes[0]})
    )
    assert done.status_code == 302
    token = claims(rp.exchange(query(done.headers["Location"])["code"]).json()["id_token"])
    assert token["amr"] == ["pwd", "otp"]
    # Removing the last passkey (the only second factor) takes the recovery codes with it.
    fresh()
    passkey_id = Passkey.query.filter_by(user_id=member.id).one().id
    browser.post(
        f"/account/two-step/passkeys/{passkey_id}/remove",
        data={"csrf_token": csrf_token(browser.get("/account").text), "confirm": "yes"},
    )
    fresh()
    assert RecoveryCode.query.filter_by(user_id=member.id).count() == 0
    assert "Two-step verification: off" in browser.get("/account").text


# -- a challenge is answered once, by the browser that asked, for the member it names -------------


def passkey_page(browser: Browser):
    """The page of a sign-in with a passkey alone, started from the login page (no app)."""
    login = browser.get("/login")
    page = browser.post("/login/passkey", data={"csrf_token": csrf_token(login.text), "interaction": ""})
    assert page.status_code == 200 and 'data-webauthn="get"' in page.text
    return page


def answer_form(page, answer: str) -> dict:
    return {"csrf_token": csrf_token(page.text), "interaction": "", "credential": answer}


def copy_of(browser: Browser) -> Browser:
    """Another browser holding a copy of `browser`'s cookies as they are now."""
    copy = Browser(browser.base)
    copy.session.cookies.update(browser.session.cookies.copy())
    return copy


def sessions_of(member) -> int:
    fresh()
    return LoginSession.query.filter_by(user_id=member.id).count()


def test_an_old_cookie_sent_again_with_a_captured_answer_is_refused(live_server):
    """A passkey that does not count (its signature count stays 0, as many synced passkeys' do):
    only the challenge stops a replay. Someone who kept a copy of the browser's cookie from before
    the answer, and captured the answer, sends both again: the challenge was used up server-side."""
    member = make_member()
    _, authenticator = add_passkey(live_server, member, counting=False)
    browser = Browser(live_server.url)
    page = passkey_page(browser)
    kept = copy_of(browser)  # the cookie that names the pending challenge
    data = answer_form(page, authenticator.get(options_on(page.text)))
    assert browser.post("/login/passkey", data=data).status_code == 302
    signed_in_before = sessions_of(member)

    replayed = kept.post("/login/passkey", data=data)
    assert replayed.status_code == 401 and "expired" in alerts(replayed.text)
    assert sessions_of(member) == signed_in_before
    fresh()
    assert db.session.get(Passkey, Passkey.query.filter_by(user_id=member.id).one().id).sign_count == 0


def test_an_old_cookie_sent_again_at_the_second_step_is_refused(live_server):
    """The same at the second step after the password: the copied cookie still holds the pending
    second step, but its challenge was used up by the first answer."""
    member = make_member()
    _, authenticator = add_passkey(live_server, member, counting=False)
    browser = Browser(live_server.url)
    browser.get("/login")
    step = browser.login(member.email)
    assert step.url.endswith("/login/second-factor") and "Use a passkey" in step.text
    kept = copy_of(browser)
    data = {"csrf_token": csrf_token(step.text), "credential": authenticator.get(options_on(step.text))}
    assert browser.post("/login/second-factor/passkey", data=data).status_code == 302
    signed_in_before = sessions_of(member)

    replayed = kept.post("/login/second-factor/passkey", data=data)
    assert replayed.status_code == 401 and "expired" in alerts(replayed.text)
    assert sessions_of(member) == signed_in_before


def test_a_registration_challenge_is_answered_once(live_server):
    """A wrong answer to create() uses the challenge up too: a right answer sent afterwards with a
    copy of the cookie from before adds no passkey."""
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    ask = browser.post("/account/two-step/passkeys/new", data={"csrf_token": csrf_token(browser.get("/account").text)})
    create = browser.post(
        "/account/two-step/passkeys/new", data={"csrf_token": csrf_token(ask.text), "name": "Key", "current": PASSWORD}
    )
    options = options_on(create.text)
    kept = copy_of(browser)
    form = {"csrf_token": csrf_token(create.text), "name": "Key"}
    wrong_origin = SoftAuthenticator("https://evil.example").create(options)
    refused = browser.post("/account/two-step/passkeys", data={**form, "credential": wrong_origin})
    assert refused.status_code == 303 and "could not be checked" in " ".join(flashes(browser.get("/account").text))

    right = SoftAuthenticator(live_server.url).create(options)
    replayed = kept.post("/account/two-step/passkeys", data={**form, "credential": right})
    assert replayed.status_code == 303 and "expired" in " ".join(flashes(kept.get("/account").text))
    fresh()
    assert Passkey.query.filter_by(user_id=member.id).count() == 0


def test_an_answer_naming_another_member_is_refused(live_server):
    """The answer's userHandle must be the passkey's member: a passkey answer that names another
    member (or, signing in with a passkey alone, names none) signs nobody in."""
    member, other = make_member(), make_member()
    _, authenticator = add_passkey(live_server, member)
    for handle in (other.id.encode(), b""):
        browser = Browser(live_server.url)
        page = passkey_page(browser)
        answer = authenticator.get(options_on(page.text), user_handle=handle)
        refused = browser.post("/login/passkey", data=answer_form(page, answer))
        assert refused.status_code == 401 and "not registered for this account" in alerts(refused.text)
    # At the second step the member is known: naming another one is refused there too.
    browser = Browser(live_server.url)
    browser.get("/login")
    step = browser.login(member.email)
    answer = authenticator.get(options_on(step.text), user_handle=other.id.encode())
    refused = browser.post(
        "/login/second-factor/passkey", data={"csrf_token": csrf_token(step.text), "credential": answer}
    )
    assert refused.status_code == 401 and "not registered for this account" in alerts(refused.text)
    assert sessions_of(other) == 0
    # Its own handle signs the member in.
    page = passkey_page(browser := Browser(live_server.url))
    assert (
        browser.post("/login/passkey", data=answer_form(page, authenticator.get(options_on(page.text)))).status_code
        == 302
    )


def test_an_expired_challenge_is_refused_and_stored_only_as_hashes(live_server):
    member = make_member()
    _, authenticator = add_passkey(live_server, member)
    browser = Browser(live_server.url)
    page = passkey_page(browser)
    options = options_on(page.text)
    fresh()
    [row] = WebauthnChallenge.query.filter_by(purpose="signin").all()
    assert row.user_id is None and row.challenge_hash == hashlib.sha256(unb64url(options["challenge"])).hexdigest()
    assert options["challenge"] not in " ".join(browser.session.cookies.values())  # the browser keeps a handle only
    row.expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()

    refused = browser.post("/login/passkey", data=answer_form(page, authenticator.get(options)))
    assert refused.status_code == 401 and "expired" in alerts(refused.text)
    used = row.challenge_hash
    fresh()
    assert WebauthnChallenge.query.filter_by(challenge_hash=used).count() == 0  # used up
    assert WebauthnChallenge.query.count() == 1  # the new one on the page that says so
    assert sessions_of(member) == 1  # the account page's, from add_passkey


def test_a_cloned_authenticators_stale_count_is_refused(live_server):
    """A counting authenticator's count must grow: an answer signed with a count already seen (a
    cloned authenticator) is refused, though its challenge is fresh."""
    member = make_member()
    _, authenticator = add_passkey(live_server, member)
    browser = Browser(live_server.url)
    page = passkey_page(browser)
    assert (
        browser.post("/login/passkey", data=answer_form(page, authenticator.get(options_on(page.text)))).status_code
        == 302
    )
    clone = Browser(live_server.url)
    page = passkey_page(clone)
    refused = clone.post("/login/passkey", data=answer_form(page, authenticator.get(options_on(page.text), count=1)))
    assert refused.status_code == 401 and "could not be checked" in alerts(refused.text)


def test_a_members_passkeys_have_unique_names_and_adding_follows_the_removal_rule(live_server):
    member = make_member()
    browser, _authenticator = add_passkey(live_server, member, name="Laptop")
    account = browser.get("/account")
    ask = browser.post("/account/two-step/passkeys/new", data={"csrf_token": csrf_token(account.text)})
    taken = browser.post(
        "/account/two-step/passkeys/new", data={"csrf_token": csrf_token(ask.text), "name": " laptop "}
    )
    assert taken.status_code == 400 and 'You have a passkey called "laptop" already' in unescape(taken.text)
    assert 'data-webauthn="create"' not in taken.text
    # A name left blank is numbered when "Passkey" is taken; one taken meanwhile (another tab) too.
    fresh()
    db.session.add(Passkey(user_id=member.id, credential_id=f"{member.id}-old", public_key=b"cose", name="Passkey"))
    db.session.commit()
    create = browser.post("/account/two-step/passkeys/new", data={"csrf_token": csrf_token(ask.text), "name": ""})
    assert create.status_code == 200 and 'data-webauthn="create"' in create.text
    # The confirmation lapses during the ceremony: the answer is held until the member confirms.
    age_confirmation(browser, 601)
    answer = SoftAuthenticator(live_server.url).create(options_on(create.text))
    held = browser.post(
        "/account/two-step/passkeys", data={"csrf_token": csrf_token(create.text), "name": "", "credential": answer}
    )
    assert held.status_code == 200 and "Confirm it is you" in held.text and "To add a passkey" in held.text
    assert 'name="credential"' in held.text  # carried through
    done = browser.post(
        "/account/two-step/passkeys",
        data={"csrf_token": csrf_token(held.text), "name": "", "credential": answer, "current": PASSWORD},
    )
    assert done.status_code == 303
    fresh()
    assert sorted(p.name for p in Passkey.query.filter_by(user_id=member.id)) == ["Laptop", "Passkey", "Passkey 2"]


def test_the_autofill_options_need_the_pages_token_and_a_host_name_issuer(live_server):
    browser = Browser(live_server.url)
    login = browser.get("/login")
    assert "webauthn" not in login.text  # an IP-address issuer offers no passkeys: no autofill either
    assert browser.post("/login/passkey/options").status_code == 400  # no CSRF token
    answer = browser.post("/login/passkey/options", headers={"X-CSRFToken": csrf_token(login.text)})
    assert answer.status_code == 404 and "text/html" in answer.headers["Content-Type"]  # the error page
