"""OpenID Connect RP-Initiated Logout 1.0 at /api/auth/oauth2/endsession, over HTTP."""

from __future__ import annotations

import time

import requests
from joserfc.jwk import RSAKey

from app.core.extensions import db
from app.models import LoginSession
from app.protocol.jwks import keystore
from tests.factories import db_state, make_member
from tests.flows import csrf_token, hidden, query
from tests.issued import issue, jwt_claims, mint_id_token

END_SESSION = "/api/auth/oauth2/endsession"
LOGOUT_URI = "http://127.0.0.1:7199/logged-out"
OTHER_URI = "http://127.0.0.1:7199/elsewhere"


def app_with_logout(live_server, **kw):
    return issue(live_server.url, scope="openid profile", post_logout_redirect_uris=[LOGOUT_URI, OTHER_URI], **kw)


def live_sessions(user_id: str) -> list[LoginSession]:
    db.session.remove()
    return db.session.scalars(
        db.select(LoginSession).where(LoginSession.user_id == user_id, LoginSession.ended_at.is_(None))
    ).all()


def prompt_none_error(issued) -> str | None:
    params = issued.rp.auth_params(scope="openid profile", prompt="none")
    response = issued.browser.get("/api/auth/oauth2/authorize", params=params)
    assert response.status_code == 302
    return query(response.headers["Location"]).get("error")


def test_valid_hint_signs_out_and_returns_to_the_app_with_state(live_server):
    issued = app_with_logout(live_server)
    assert prompt_none_error(issued) is None  # signed in, consent remembered: silent sign-in works
    assert len(live_sessions(issued.member.id)) == 1

    response = issued.browser.get(
        END_SESSION,
        params={
            "id_token_hint": issued.id_token,
            "post_logout_redirect_uri": LOGOUT_URI,
            "state": "st-123",
            "client_id": issued.client_id,
            "ui_locales": "en",
        },
    )

    assert response.status_code == 302
    assert response.headers["Location"] == LOGOUT_URI + "?state=st-123"
    assert response.headers["Cache-Control"] == "no-store"
    assert live_sessions(issued.member.id) == []
    assert prompt_none_error(issued) == "login_required"


def test_an_expired_hint_is_still_accepted_and_post_works(live_server):
    issued = app_with_logout(live_server)
    now = int(time.time())
    claims = jwt_claims(issued.id_token) | {"iat": now - 7200, "exp": now - 3600}
    expired = mint_id_token(claims)

    response = issued.browser.post(END_SESSION, data={"id_token_hint": expired, "post_logout_redirect_uri": OTHER_URI})

    assert response.status_code == 302
    assert response.headers["Location"] == OTHER_URI
    assert live_sessions(issued.member.id) == []


def test_unregistered_post_logout_uri_means_no_redirect(live_server):
    issued = app_with_logout(live_server)
    response = issued.browser.get(
        END_SESSION,
        params={
            "id_token_hint": issued.id_token,
            "post_logout_redirect_uri": "https://evil.example/cb",
            "state": "x",
        },
    )
    assert response.status_code == 200
    assert "You are signed out" in response.text
    assert "evil.example" not in response.text
    assert live_sessions(issued.member.id) == []
    # A registered URI of *another* app is not registered for this one either.
    other = app_with_logout(live_server)
    response = other.browser.get(
        END_SESSION,
        params={
            "id_token_hint": other.id_token,
            "post_logout_redirect_uri": LOGOUT_URI + "/",
        },
    )
    assert response.status_code == 200 and "Location" not in response.headers


def test_forged_or_foreign_hints_are_refused_and_the_session_stays(live_server):
    issued = app_with_logout(live_server)
    claims = jwt_claims(issued.id_token)
    stranger_key = RSAKey.generate_key(2048, private=True)
    forged = mint_id_token(claims, key=stranger_key, kid=keystore.signing_key()[0])
    foreign_issuer = mint_id_token(claims | {"iss": "https://elsewhere.example"})
    tampered = issued.id_token[:-4] + ("AAAA" if not issued.id_token.endswith("AAAA") else "BBBB")
    before = db_state()

    for hint in (forged, foreign_issuer, tampered, "not.a.jwt", "x" * 9000, "e30.e30.", "\u00e9\u00e9"):
        response = issued.browser.post(
            END_SESSION, data={"id_token_hint": hint, "post_logout_redirect_uri": LOGOUT_URI}
        )
        assert response.status_code == 400, hint[:40]
        assert "Location" not in response.headers
        assert "Sign-out request not valid" in response.text
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]

    assert db_state() == before
    assert prompt_none_error(issued) is None


def test_client_id_must_be_the_hints_audience(live_server):
    issued = app_with_logout(live_server)
    other = app_with_logout(live_server, member=issued.member, browser=issued.browser)
    response = issued.browser.get(
        END_SESSION,
        params={
            "id_token_hint": issued.id_token,
            "client_id": other.client_id,
            "post_logout_redirect_uri": LOGOUT_URI,
        },
    )
    assert response.status_code == 400
    assert len(live_sessions(issued.member.id)) == 1


def test_without_a_hint_the_member_confirms_first(live_server):
    issued = app_with_logout(live_server)
    page = issued.browser.get(
        END_SESSION,
        params={
            "client_id": issued.client_id,
            "post_logout_redirect_uri": LOGOUT_URI,
            "state": "s1",
        },
    )
    assert page.status_code == 200
    assert "Sign out of Credits ID?" in page.text
    assert "Test App" in page.text
    assert len(live_sessions(issued.member.id)) == 1  # nothing happened yet

    # A forged confirmation (no CSRF token) does nothing.
    forged = issued.browser.post(
        END_SESSION + "/confirm", data={"client_id": issued.client_id, "post_logout_redirect_uri": LOGOUT_URI}
    )
    assert forged.status_code == 400
    assert len(live_sessions(issued.member.id)) == 1

    confirm = issued.browser.post(
        END_SESSION + "/confirm",
        data={
            "csrf_token": csrf_token(page.text),
            **{
                name: hidden(page.text, name) or ""
                for name in ("id_token_hint", "client_id", "post_logout_redirect_uri", "state")
            },
        },
    )
    assert confirm.status_code == 302
    assert confirm.headers["Location"] == LOGOUT_URI + "?state=s1"
    assert live_sessions(issued.member.id) == []
    assert prompt_none_error(issued) == "login_required"


def test_without_a_client_confirmation_ends_on_our_page(live_server):
    issued = app_with_logout(live_server)
    page = issued.browser.get(END_SESSION, params={"post_logout_redirect_uri": LOGOUT_URI})
    assert "Sign out of Credits ID?" in page.text
    confirm = issued.browser.post(
        END_SESSION + "/confirm", data={"csrf_token": csrf_token(page.text), "post_logout_redirect_uri": LOGOUT_URI}
    )
    assert confirm.status_code == 200
    assert "You are signed out" in confirm.text
    assert live_sessions(issued.member.id) == []


def test_a_hint_for_another_member_asks_before_signing_this_one_out(live_server):
    issued = app_with_logout(live_server)
    someone_else = make_member()
    claims = jwt_claims(issued.id_token) | {"sub": someone_else.sub}
    response = issued.browser.get(
        END_SESSION, params={"id_token_hint": mint_id_token(claims), "post_logout_redirect_uri": LOGOUT_URI}
    )
    assert response.status_code == 200
    assert "Sign out of Credits ID?" in response.text
    assert len(live_sessions(issued.member.id)) == 1


def test_without_any_session_a_valid_hint_just_returns_to_the_app(live_server):
    issued = app_with_logout(live_server)
    response = requests.get(
        live_server(END_SESSION),
        params={"id_token_hint": issued.id_token, "post_logout_redirect_uri": LOGOUT_URI},
        allow_redirects=False,
        timeout=30,
    )
    assert response.status_code == 302 and response.headers["Location"] == LOGOUT_URI
    assert len(live_sessions(issued.member.id)) == 1  # that browser's session is not this one


def test_discovery_advertises_end_session(live_server):
    doc = requests.get(live_server("/.well-known/openid-configuration"), timeout=30).json()
    assert doc["end_session_endpoint"] == live_server(END_SESSION)
