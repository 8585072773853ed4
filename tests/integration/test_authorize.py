"""The authorization endpoint, login and consent hand-offs, over HTTP against the live server."""

import html
import re
import time
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import requests

from app.core.extensions import db
from app.models import AuthorizationCode, Consent, Interaction, LoginSession
from tests.factories import PASSWORD, REDIRECT_URI, db_state, make_client
from tests.flows import AUTHORIZE, Browser, RelyingParty, csrf_token, hidden, query, sign_in


def redirect_params(response) -> dict:
    assert response.status_code == 302, response.text[:300]
    location = response.headers["Location"]
    assert location.startswith(REDIRECT_URI), location
    return query(location)


def assert_error_page(response, status=400):
    """An error shown to the member: never a redirect, never the app's URI."""
    assert response.status_code == status
    assert "Location" not in response.headers
    assert response.headers["Content-Type"].startswith("text/html")


# -- the trust gate: errors that must never redirect -------------------------------------------


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p.pop("client_id"),
        lambda p: p.update(client_id="no-such-client"),
        lambda p: p.update(redirect_uri="http://127.0.0.1:7199/other"),
        lambda p: p.update(redirect_uri=REDIRECT_URI + "/"),
        lambda p: p.update(redirect_uri=REDIRECT_URI + "?x=1"),
        lambda p: p.update(redirect_uri="HTTP://127.0.0.1:7199/cb"),
        lambda p: p.update(redirect_uri="https://evil.example/cb"),
        lambda p: p.update(redirect_uri="http://127.0.0.1:7198/cb"),
    ],
    ids=[
        "missing-client",
        "unknown-client",
        "other-path",
        "trailing-slash",
        "extra-query",
        "case",
        "foreign",
        "other-port-of-a-web-app",
    ],
)
def test_untrusted_requests_show_an_error_page_and_never_redirect(live_server, rp, mutate):
    params = rp.auth_params()
    mutate(params)
    before = db_state()
    response = Browser(live_server.url).get(AUTHORIZE, params=params)
    assert_error_page(response)
    # The refused address may be named as text (issue 21, item 7), never offered as a link.
    assert 'href="https://evil' not in response.text and 'src="https://evil' not in response.text
    if params.get("redirect_uri") and "client_id" in params and params["client_id"] == rp.client_id:
        assert f'<code id="error-redirect-uri">{params["redirect_uri"]}</code>' in response.text
    assert db_state() == before


def test_redirect_uri_may_be_omitted_only_when_exactly_one_is_registered(live_server, member):
    single, secret = make_client()
    rp = RelyingParty(live_server.url, single.client_id, secret)
    params = rp.auth_params()
    params.pop("redirect_uri")
    browser = Browser(live_server.url)
    browser.authorize(params)
    callback = redirect_params(browser.consent()) if 'name="decision"' in browser.login(member.email).text else None
    assert callback and "code" in callback
    # the token request then carries no redirect_uri either (it was not in the request)
    token = rp.exchange(callback["code"], redirect_uri=None)
    assert token.status_code == 200, token.text

    several, _ = make_client(redirect_uris=[REDIRECT_URI, "http://127.0.0.1:7199/other"])
    params = RelyingParty(live_server.url, several.client_id).auth_params()
    params.pop("redirect_uri")
    assert_error_page(Browser(live_server.url).get(AUTHORIZE, params=params))


def test_disabled_app_gets_an_error_page(live_server, rp):
    from app.models import Client

    client = Client.query.filter_by(client_id=rp.client_id).one()
    client.status = "disabled"
    db.session.commit()
    response = Browser(live_server.url).get(AUTHORIZE, params=rp.auth_params())
    assert_error_page(response, 403)
    assert "disabled" in response.text


# -- validation errors: redirected to the registered URI with state and iss -----------------------


@pytest.mark.parametrize(
    "mutate,error",
    [
        (lambda p: p.pop("response_type"), "invalid_request"),
        (lambda p: p.update(response_type="token"), "unsupported_response_type"),
        (lambda p: p.update(response_type="code id_token"), "unsupported_response_type"),
        (lambda p: p.pop("code_challenge"), "invalid_request"),
        (lambda p: p.pop("code_challenge_method"), "invalid_request"),
        (lambda p: p.update(code_challenge_method="plain"), "invalid_request"),
        (lambda p: p.update(code_challenge="short"), "invalid_request"),
        (lambda p: p.update(scope="profile email"), "invalid_scope"),
        (lambda p: p.update(max_age="soon"), "invalid_request"),
        (lambda p: p.update(max_age="\u00b2"), "invalid_request"),  # "²".isdigit() is True; int() refuses it
        (lambda p: p.update(prompt="none login"), "invalid_request"),
        (lambda p: p.update(response_mode="fragment"), "invalid_request"),
        (lambda p: p.update(request="eyJhbGciOiJub25lIn0.eyJzY29wZSI6Im9wZW5pZCJ9."), "request_not_supported"),
        (lambda p: p.update(request_uri="https://app.example/request.jwt"), "request_uri_not_supported"),
        (lambda p: (p.pop("response_type"), p.update(request="e30.e30.")), "request_not_supported"),
    ],
    ids=[
        "no-response-type",
        "token",
        "hybrid",
        "no-challenge",
        "no-method",
        "plain",
        "bad-challenge",
        "no-openid",
        "bad-max-age",
        "superscript-max-age",
        "none-plus-login",
        "fragment",
        "request-object",
        "request-uri",
        "everything-inside-a-request-object",
    ],
)
def test_invalid_requests_redirect_an_error_with_state_and_iss(live_server, rp, settings, mutate, error):
    params = rp.auth_params()
    mutate(params)
    before = db_state()
    response = Browser(live_server.url).get(AUTHORIZE, params=params)
    callback = redirect_params(response)
    assert callback["error"] == error
    assert callback["state"] == params["state"]
    assert callback["iss"] == settings["ISSUER_URL"]
    assert "code" not in callback
    assert db_state() == before


def test_a_native_apps_loopback_redirect_uri_matches_any_port(live_server, member):
    """RFC 8252 7.3: the app listens on whatever port the system gives it; the code goes there, and
    the token request repeats that very URI."""
    client, _ = make_client(public=True, redirect_uris=["http://127.0.0.1/callback", "http://[::1]/callback"])
    for redirect_uri in ("http://127.0.0.1:51004/callback", "http://[::1]:61999/callback"):
        rp = RelyingParty(live_server.url, client.client_id, None, redirect_uri=redirect_uri)
        params, _ = sign_in(live_server.url, rp, member.email, scope="openid")
        assert rp.exchange(params["code"]).status_code == 200
    rp = RelyingParty(live_server.url, client.client_id, None, redirect_uri="http://127.0.0.1:51004/callback")
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid")
    rp.redirect_uri = "http://127.0.0.1:51005/callback"  # a code is bound to the exact URI it went to
    assert rp.exchange(params["code"]).json()["error"] == "invalid_grant"
    for elsewhere in (
        "http://127.0.0.1:51004/other",
        "http://127.0.0.2:51004/callback",
        "http://localhost:51004/callback",
        "https://127.0.0.1:51004/callback",
        "http://127.0.0.1:51004/callback?x=1",
    ):
        params = RelyingParty(live_server.url, client.client_id, None, redirect_uri=elsewhere).auth_params()
        assert_error_page(Browser(live_server.url).get(AUTHORIZE, params=params))


def test_public_clients_always_need_pkce(live_server, public_rp):
    params = public_rp.auth_params()
    del params["code_challenge"], params["code_challenge_method"]
    assert redirect_params(Browser(live_server.url).get(AUTHORIZE, params=params))["error"] == "invalid_request"


def test_a_confidential_legacy_app_may_skip_pkce_when_an_admin_relaxed_it(live_server, member):
    client, secret = make_client(require_pkce=False)
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params = rp.auth_params()
    del params["code_challenge"], params["code_challenge_method"]
    browser = Browser(live_server.url)
    browser.authorize(params)
    browser.login(member.email)
    callback = redirect_params(browser.consent())
    rp.verifier = None  # no PKCE in this request, so none at the token endpoint either
    assert rp.exchange(callback["code"]).status_code == 200
    # ...but a `plain` challenge is still refused
    params = rp.auth_params(code_challenge_method="plain")
    assert redirect_params(Browser(live_server.url).get(AUTHORIZE, params=params))["error"] == "invalid_request"


def test_repeated_parameters_are_rejected(live_server, rp):
    params = [*list(rp.auth_params().items()), ("state", "second")]
    response = Browser(live_server.url).get(AUTHORIZE, params=params)
    assert redirect_params(response)["error"] == "invalid_request"


# -- the happy path and its hand-offs ------------------------------------------------------------


def test_login_then_consent_then_code_with_state_and_iss(live_server, rp, member, settings):
    browser = Browser(live_server.url)
    params = rp.auth_params(scope="openid profile credits:read unknown:scope")
    login_page = browser.authorize(params)
    assert login_page.status_code == 200 and 'type="password"' in login_page.text
    assert urlsplit(login_page.url).path == "/login"
    assert "Test App" in login_page.text
    consent_page = browser.login(member.email)
    assert "Read your credits" in consent_page.text and "See your name" in consent_page.text
    assert "Test App" in consent_page.text
    assert "unknown:scope" not in consent_page.text
    callback = redirect_params(browser.consent())
    assert callback["state"] == params["state"] and callback["iss"] == settings["ISSUER_URL"]
    assert len(callback["code"]) >= 40
    code = db.session.scalar(db.select(AuthorizationCode))
    assert code.scope == "openid profile credits:read"  # the unknown scope was dropped, not an error


def test_authorize_accepts_post(live_server, rp, member):
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params(), method="POST")
    browser.login(member.email)
    assert "code" in redirect_params(browser.consent())


def test_consent_page_words_each_scope_and_marks_analytics_for_basic(live_server, rp, member):
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params(scope="openid profile email offline_access credits:read analytics:read"))
    page = browser.login(member.email)
    for words in (
        "Read your credits",
        "Read your analytics",
        "See your name",
        "See your email address",
        "Stay connected when you are away",
    ):
        assert words in page.text
    assert "Not included in your basic membership" in page.text
    assert 'value="analytics:read"' not in page.text  # nothing to tick: it cannot be granted
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-store"
    redirect_params(browser.consent())
    code = db.session.scalar(db.select(AuthorizationCode))
    assert "analytics:read" not in code.scope.split()
    assert "credits:read" in code.scope.split()


def test_pro_members_can_grant_analytics(live_server, rp, pro_member):
    params, _ = sign_in(live_server.url, rp, pro_member.email, scope="openid analytics:read credits:read")
    body = rp.exchange(params["code"]).json()
    assert set(body["scope"].split()) == {"openid", "analytics:read", "credits:read"}


def test_deny_sends_access_denied_with_state(live_server, rp, member, settings):
    browser = Browser(live_server.url)
    params = rp.auth_params()
    browser.authorize(params)
    browser.login(member.email)
    callback = redirect_params(browser.consent(allow=False))
    assert callback["error"] == "access_denied"
    assert callback["state"] == params["state"] and callback["iss"] == settings["ISSUER_URL"]
    assert Consent.query.count() == 0 and AuthorizationCode.query.count() == 0


def test_consent_decision_is_single_use(live_server, rp, member):
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params())
    page = browser.login(member.email)
    form = {"csrf_token": csrf_token(page.text), "interaction": hidden(page.text, "interaction"), "decision": "allow"}
    first = browser.post("/consent", data=form)
    assert "code=" in first.headers["Location"]
    replay = browser.post("/consent", data=form)  # a double click, or a reload
    assert_error_page(replay)
    # The first answer went through: the page must not claim that nothing was shared.
    assert "already answered" in replay.text and "Your first answer was sent to the application" in replay.text
    assert "Nothing was shared" not in replay.text
    assert AuthorizationCode.query.count() == 1


def test_consent_needs_its_csrf_token(live_server, rp, member):
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params())
    page = browser.login(member.email)
    before = db_state()
    response = browser.post("/consent", data={"interaction": hidden(page.text, "interaction"), "decision": "allow"})
    assert_error_page(response)
    assert db_state() == before


def test_login_needs_its_csrf_token(live_server, rp, member):
    """The login form has no CSRF field of its own (CheckedForm): CSRFProtect refuses the POST first."""
    browser = Browser(live_server.url)
    page = browser.authorize(rp.auth_params())
    before = db_state()
    data = {"email": member.email, "password": PASSWORD, "interaction": hidden(page.text, "interaction")}
    assert_error_page(browser.post("/login", data=data))
    assert_error_page(browser.post("/login", data={**data, "csrf_token": "forged"}))
    assert db_state() == before and LoginSession.query.count() == 0


def test_the_cookie_is_written_when_the_session_changes_and_not_again_by_the_next_page(live_server, rp, member):
    """The browser's first request gets its id and its CSRF secret in one cookie, and a login its
    new session and new CSRF secret in one: the login page and the consent page after them write
    no cookie, and their tokens are the ones the answers accept."""
    browser = Browser(live_server.url)
    first = browser.get(AUTHORIZE, params=rp.auth_params())
    assert "credits_id_session=" in first.headers["Set-Cookie"]
    login_page = browser.follow(first)
    assert login_page.status_code == 200 and "Set-Cookie" not in login_page.headers
    signed_in = browser.post(
        "/login",
        data={
            "csrf_token": csrf_token(login_page.text),
            "email": member.email,
            "password": PASSWORD,
            "interaction": hidden(login_page.text, "interaction"),
        },
    )
    assert "credits_id_session=" in signed_in.headers["Set-Cookie"]
    consent_page = browser.follow(signed_in)
    assert 'name="decision"' in consent_page.text and "Set-Cookie" not in consent_page.headers
    assert csrf_token(consent_page.text) != csrf_token(login_page.text)  # renewed with the session
    assert "code=" in browser.consent().headers["Location"]


def test_a_pending_request_cannot_be_finished_from_another_browser(live_server, rp, member):
    browser = Browser(live_server.url)
    login_page = browser.authorize(rp.auth_params())
    uid = hidden(login_page.text, "interaction")
    thief = Browser(live_server.url)
    thief.get("/login")
    response = thief.get(f"/login?interaction={uid}")
    assert_error_page(response)
    assert Interaction.query.count() == 1


def test_remembered_consent_skips_the_page_for_the_same_or_fewer_scopes(live_server, rp, member):
    _, browser = sign_in(live_server.url, rp, member.email, scope="openid profile email")
    fewer = browser.authorize(rp.auth_params(scope="openid email"))
    assert "code" in redirect_params(fewer)
    more = browser.authorize(rp.auth_params(scope="openid email credits:read"))
    assert more.status_code == 200 and 'name="decision"' in more.text
    assert "Read your credits" in more.text


def test_prompt_consent_shows_the_page_again(live_server, rp, member):
    _, browser = sign_in(live_server.url, rp, member.email)
    page = browser.authorize(rp.auth_params(prompt="consent"))
    assert page.status_code == 200 and 'name="decision"' in page.text


def test_prompt_none_never_shows_ui(live_server, rp, member):
    browser = Browser(live_server.url)
    assert redirect_params(browser.authorize(rp.auth_params(prompt="none")))["error"] == "login_required"
    browser.authorize(rp.auth_params(scope="openid"))
    browser.login(member.email)
    browser.consent()  # consent for openid only
    wider = redirect_params(browser.authorize(rp.auth_params(scope="openid email", prompt="none")))
    assert wider["error"] == "consent_required"
    same = redirect_params(browser.authorize(rp.auth_params(scope="openid", prompt="none")))
    assert "code" in same


def test_prompt_login_and_max_age_force_a_new_login(live_server, rp, member):
    _params, browser = sign_in(live_server.url, rp, member.email)
    first_login = db.session.scalar(db.select(LoginSession).order_by(LoginSession.id.desc()))
    again = browser.authorize(rp.auth_params(prompt="login"))
    assert 'type="password"' in again.text
    callback = redirect_params(browser.login(member.email))
    db.session.remove()
    second_login = db.session.scalar(db.select(LoginSession).order_by(LoginSession.id.desc()))
    assert second_login.id != first_login.id
    assert second_login.session_hash != first_login.session_hash  # a new session id at every login
    # The browser's earlier session ends on the server: its old cookie must not stay valid.
    assert db.session.get(LoginSession, first_login.id).ended_at is not None
    assert second_login.ended_at is None
    assert "code" in callback
    forced = browser.authorize(rp.auth_params(max_age="0"))
    assert 'type="password"' in forced.text


def test_max_age_accepts_a_recent_enough_login_and_refuses_an_older_one(live_server, rp, member):
    """OIDC Core 3.1.2.1: a login within max_age seconds goes on; an older one must be repeated
    (or, with prompt=none, answered `login_required`)."""
    _, browser = sign_in(live_server.url, rp, member.email)
    within = browser.authorize(rp.auth_params(max_age="3600"))
    assert within.status_code == 302 and "code" in redirect_params(within)
    login = db.session.scalar(db.select(LoginSession).where(LoginSession.user_id == member.id))
    login.auth_time = login.auth_time - timedelta(seconds=120)
    db.session.commit()
    older = browser.authorize(rp.auth_params(max_age="60"))
    assert older.status_code == 200 and 'type="password"' in older.text
    silent = browser.authorize(rp.auth_params(max_age="60", prompt="none"))
    assert redirect_params(silent)["error"] == "login_required"
    still_fine = browser.authorize(rp.auth_params(max_age="600"))
    assert "code" in redirect_params(still_fine)


@pytest.mark.parametrize("extra", [{"prompt": "login"}, {"max_age": "0"}], ids=["prompt-login", "max-age-0"])
def test_the_consent_page_is_no_way_around_a_required_login(live_server, rp, member, extra):
    """Sent to the login page, the member opens the consent page of the same request instead: it
    sends them back to the login page, and answering it anyway issues no code (OIDC Core 3.1.2.1)."""
    _, browser = sign_in(live_server.url, rp, member.email)
    login_page = browser.authorize(rp.auth_params(**extra))
    assert 'type="password"' in login_page.text
    uid = hidden(login_page.text, "interaction")
    shown = browser.get("/consent", params={"interaction": uid})
    assert shown.status_code == 302 and shown.headers["Location"].startswith(f"/login?interaction={uid}")
    token = csrf_token(browser.get("/login", params={"interaction": uid}).text)
    before = AuthorizationCode.query.count()
    answered = browser.post(
        "/consent",
        data={"csrf_token": token, "interaction": uid, "decision": "allow", "scope": ["openid", "profile", "email"]},
    )
    assert answered.status_code == 302 and answered.headers["Location"].startswith(f"/login?interaction={uid}")
    db.session.remove()
    assert AuthorizationCode.query.count() == before
    assert db.session.get(Interaction, uid).consumed_at is None
    # Signing in again for this request lets it go on.
    browser.get("/login", params={"interaction": uid})
    callback = redirect_params(browser.login(member.email))
    assert "code" in callback


def test_login_hint_prefills_the_email(live_server, rp):
    page = Browser(live_server.url).authorize(rp.auth_params(login_hint="someone@example.test"))
    assert 'value="someone@example.test"' in page.text


def test_wrong_password_and_unknown_email_get_the_same_answer(live_server, rp, member):
    answers = []
    for email, password in ((member.email, "wrong password!"), ("nobody@example.test", "whatever it is")):
        browser = Browser(live_server.url)
        browser.authorize(rp.auth_params())
        response = browser.login(email, password)
        answers.append((response.status_code, "Incorrect email or password." in response.text))
    assert answers == [(401, True), (401, True)]
    assert LoginSession.query.count() == 0


def test_login_cookie_is_httponly_and_samesite_lax(live_server, rp, member):
    """On plain http (the live test server) the cookie stays SameSite=Lax: browsers refuse None
    without Secure. The https case is in test_headers.py."""
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params())
    browser.login(member.email)
    cookie_header = browser.last.headers.get("Set-Cookie", "") if browser.last is not None else ""
    session = requests.Session()
    response = session.get(live_server("/login"), allow_redirects=False)
    header = response.headers["Set-Cookie"] + cookie_header
    assert "HttpOnly" in header and "SameSite=Lax" in header
    assert "Secure" not in header  # a loopback http issuer; https issuers set Secure (unit-tested)


def test_the_login_cookie_is_issued_at_sign_in_and_not_signed_again(app, live_server, rp, member):
    """The login ends at a fixed time (its row's expires_at), so its cookie is issued when its
    contents change (sign-in, the new session's CSRF token), with the session's lifetime, and
    later requests of the signed-in member set no cookie (SESSION_REFRESH_EACH_REQUEST off:
    nothing to extend, nothing to sign again)."""
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params())
    browser.post(
        "/login",
        data={
            "csrf_token": csrf_token(browser.last.text),
            "email": member.email,
            "password": PASSWORD,
            "interaction": hidden(browser.last.text, "interaction"),
        },
    )
    assert "credits_id_session=" in browser.last.headers["Set-Cookie"]
    cookie = next(c for c in browser.session.cookies if c.name == "credits_id_session")
    assert abs(cookie.expires - time.time() - app.config["SESSION_LIFETIME"]) < 60
    assert browser.get(browser.last.headers["Location"]).status_code == 200  # the consent page (its CSRF token)
    for _ in range(2):
        response = browser.get("/account")
        assert response.status_code == 200
        assert "credits_id_session=" not in response.headers.get("Set-Cookie", "")


def test_an_unknown_client_id_is_echoed_as_text_with_the_developers_section(live_server):
    refused = '<b>nope</b>"-' + "x" * 300
    page = Browser(live_server.url).get(AUTHORIZE, params={"response_type": "code", "client_id": refused})
    assert page.status_code == 400 and "Unknown application" in page.text
    shown = re.search(r'id="error-client-id">([^<]*)<', page.text).group(1)
    assert html.unescape(shown) == refused[:200]  # as sent (cut at 200), escaped, never markup
    assert "<b>nope</b>" not in page.text
    assert "For the app's developer" in page.text and "No app has this client_id" in page.text
    missing = Browser(live_server.url).get(AUTHORIZE, params={"response_type": "code"})
    assert missing.status_code == 400 and "Missing application" in missing.text
    assert "Send the app's client_id" in html.unescape(missing.text)
