"""bench/floor_provider.py, the stack's floor of docs/performance.md, must do the peer's whole work,
or its figures would flatter the stack: a real code + PKCE exchange with an RS256 ID token that
verifies against its key set, refresh rotation that retires the old token, userinfo by scope, and
the protocol's refusals. Its speed is for the benchmark, not for tests."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from bench import floor_provider as floor

SCOPE = "openid profile email offline_access"


@pytest.fixture
def provider():
    app = floor.create_app()
    browser, rp = app.test_client(), app.test_client()
    basic = base64.b64encode(f"{floor.CLIENT_ID}:{floor.CLIENT_SECRET}".encode()).decode()
    return app, browser, rp, {"Authorization": f"Basic {basic}"}


def _authorize(browser, prompt: str | None = "consent", challenge: str | None = None) -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = challenge or base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": floor.CLIENT_ID,
        "redirect_uri": floor.REDIRECT_URI,
        "scope": SCOPE,
        "state": "st",
        "nonce": "n-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **({"prompt": prompt} if prompt else {}),
    }
    url = "/authorize?" + urlencode(query)
    response = browser.get(url)
    if response.status_code == 302 and response.headers["Location"].endswith("/login"):
        assert "password" in browser.get("/login").get_data(as_text=True)
        assert browser.post("/login", data={"username": floor.USERNAME, "password": "wrong"}).status_code == 401
        response = browser.post("/login", data={"username": floor.USERNAME, "password": floor.PASSWORD})
        response = browser.get(response.headers["Location"])
    if response.status_code == 200:  # the consent page, with its allow button
        assert 'value="allow"' in response.get_data(as_text=True)
        response = browser.post(url, data={"decision": "allow"})
    assert response.status_code == 302, response.get_data(as_text=True)
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query["state"] == ["st"]
    return query["code"][0], verifier


def test_code_exchange_refresh_and_userinfo_do_the_peers_work(provider):
    _app, browser, rp, basic = provider
    code, verifier = _authorize(browser)
    token = rp.post(
        "/token",
        headers=basic,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": floor.REDIRECT_URI,
        },
    )
    assert token.status_code == 200, token.json
    body = token.json
    keys = KeySet.import_key_set(rp.get("/jwks").json)
    claims = jwt.decode(body["id_token"], keys).claims
    assert claims["sub"] == "user-1" and claims["aud"] == floor.CLIENT_ID and claims["nonce"] == "n-1"
    assert claims["email"] == "alice@example.test"

    assert claims["at_hash"] and claims["auth_time"]
    # the code is single-use
    again = rp.post(
        "/token",
        headers=basic,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": floor.REDIRECT_URI,
        },
    )
    assert again.status_code == 400 and again.json["error"] == "invalid_grant"

    info = rp.get("/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert info.status_code == 200 and info.json["name"] == "Alice Example"

    refreshed = rp.post(
        "/token", headers=basic, data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]}
    )
    assert refreshed.status_code == 200, refreshed.json
    assert refreshed.json["refresh_token"] != body["refresh_token"] and "id_token" in refreshed.json
    replay = rp.post(
        "/token", headers=basic, data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]}
    )
    assert replay.status_code == 400
    old = rp.get("/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert old.status_code == 401


def test_sso_answers_with_a_code_and_pkce_is_checked(provider):
    _app, browser, rp, basic = provider
    _authorize(browser)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    sso = browser.get(
        "/authorize?"
        + urlencode(
            {
                "response_type": "code",
                "client_id": floor.CLIENT_ID,
                "redirect_uri": floor.REDIRECT_URI,
                "scope": SCOPE,
                "state": "st",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
    )
    # signed in and consented: straight to the code, no page
    assert sso.status_code == 302 and sso.headers["Location"].startswith(floor.REDIRECT_URI + "?code=")
    code = parse_qs(urlsplit(sso.headers["Location"]).query)["code"][0]
    wrong = rp.post(
        "/token",
        headers=basic,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": secrets.token_urlsafe(48),
            "redirect_uri": floor.REDIRECT_URI,
        },
    )
    assert wrong.status_code == 400 and wrong.json["error"] == "invalid_grant"
    no_pkce = browser.get(
        "/authorize?"
        + urlencode(
            {"response_type": "code", "client_id": floor.CLIENT_ID, "redirect_uri": floor.REDIRECT_URI, "scope": SCOPE}
        )
    )
    assert no_pkce.status_code == 302 and "error=invalid_request" in no_pkce.headers["Location"]
    plain = browser.get(
        "/authorize?"
        + urlencode(
            {
                "response_type": "code",
                "client_id": floor.CLIENT_ID,
                "redirect_uri": floor.REDIRECT_URI,
                "scope": SCOPE,
                "code_challenge": challenge,
            }
        )
    )  # no method: "plain"
    assert plain.status_code == 302 and "error=invalid_request" in plain.headers["Location"]


def test_a_wrong_client_secret_gets_nothing(provider):
    _app, browser, rp, _basic = provider
    code, verifier = _authorize(browser)
    bad = base64.b64encode(f"{floor.CLIENT_ID}:nope".encode()).decode()
    response = rp.post(
        "/token",
        headers={"Authorization": f"Basic {bad}"},
        data={
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": floor.REDIRECT_URI,
        },
    )
    assert response.status_code == 401 and response.json["error"] == "invalid_client"


def test_unredeemed_codes_are_purged_now_and_then_not_on_every_request(provider, monkeypatch):
    """The SSO test mints codes it never redeems. Past the limit, expired ones are dropped, and the
    next purge waits until the store has doubled: a walk of every code on each request would make
    the floor's figure grow with the length of the run."""
    _app, browser, _rp, _basic = provider
    monkeypatch.setattr(floor, "CODES_KEPT", 4)
    monkeypatch.setattr(floor, "STORE", floor.Store())
    _authorize(browser)  # signs in and consents: 1 code
    checks = []
    real_is_expired = floor.Code.is_expired
    monkeypatch.setattr(floor.Code, "is_expired", lambda self: checks.append(1) or real_is_expired(self))
    for _ in range(12):  # single sign-on: 12 more codes, none expires within the test
        _authorize(browser, prompt=None)
    assert len(floor.STORE.codes) == 13
    # Purged at the 5th code (5 kept, next past 10) and the 11th (11 kept, next past 22): 16 checks.
    # A purge on every request past 4 codes would have made 5 + 6 + ... + 13 = 81.
    assert len(checks) == 16 and floor.STORE.purge_above == 22
