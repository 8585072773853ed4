"""Several processes, one issuer: two servers (serve.py) on different ports, over one database and
one keys/ folder, with the same ISSUER_URL, take turns in one member's sign-in. No state lives in
a process, so it does not matter which one answers."""

from __future__ import annotations

import jwt
import pytest
import requests
from sqlalchemy import select

from app.core.extensions import db
from app.models import LoginSession, Token
from tests.factories import REDIRECT_URI, make_client, make_member
from tests.flows import USERINFO, Browser, RelyingParty, query, sign_in
from tests.production.servers import running


@pytest.fixture(scope="module")
def pair(app, settings, tmp_path_factory):
    """Servers A and B (one worker each): same settings, so same issuer, database and keys."""
    logs = tmp_path_factory.mktemp("two-servers")
    with running(settings, logs) as a, running(settings, logs) as b:
        assert a.port != b.port
        yield a, b


def verify_id_token(id_token: str, jwks_url: str, audience: str, issuer: str) -> dict:
    keys = requests.get(jwks_url, timeout=30).json()["keys"]
    kid = jwt.get_unverified_header(id_token)["kid"]
    key = jwt.PyJWK(next(k for k in keys if k["kid"] == kid))
    return jwt.decode(id_token, key, algorithms=["RS256"], audience=audience, issuer=issuer)


def test_authorize_on_a_token_on_b_refresh_on_a_userinfo_on_b(pair, settings):
    a, b = pair
    issuer = settings["ISSUER_URL"]
    member = make_member()
    client, secret = make_client()
    rp_a = RelyingParty(a.url, client.client_id, secret)

    # Authorize and log in on A.
    params, browser = sign_in(a.url, rp_a, member.email, scope="openid profile email offline_access")
    assert params["iss"] == issuer

    # Redeem the code on B.
    rp_b = RelyingParty(b.url, client.client_id, secret, verifier=rp_a.verifier)
    response = rp_b.exchange(params["code"])
    assert response.status_code == 200, response.text
    tokens = response.json()
    claims = verify_id_token(tokens["id_token"], a("/api/auth/jwks"), client.client_id, issuer)
    assert claims["sub"] == member.sub

    # Refresh on A.
    response = rp_a.refresh(tokens["refresh_token"])
    assert response.status_code == 200, response.text
    refreshed = response.json()
    claims = verify_id_token(refreshed["id_token"], b("/api/auth/jwks"), client.client_id, issuer)
    assert claims["sub"] == member.sub and claims["iss"] == issuer

    # Userinfo on B with the refreshed access token.
    info = requests.get(b(USERINFO), headers={"Authorization": f"Bearer {refreshed['access_token']}"}, timeout=30)
    assert info.status_code == 200, info.text
    assert info.json()["sub"] == member.sub and info.json()["email"] == member.email

    # The provider session made on A is honoured by B, and the old refresh token is spent on both.
    on_b = Browser(b.url, session=browser.session).get("/signed-in")
    assert on_b.status_code == 200 and member.email in on_b.text
    assert rp_b.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"

    # Both servers publish the same discovery document and key set.
    assert (
        requests.get(a("/.well-known/openid-configuration"), timeout=30).json()
        == requests.get(b("/.well-known/openid-configuration"), timeout=30).json()
    )
    assert requests.get(a("/api/auth/jwks"), timeout=30).json() == requests.get(b("/api/auth/jwks"), timeout=30).json()

    # Each server wrote only JSON lines, among them this flow's access lines.
    for server, endpoint in ((a, "auth.login"), (b, "oauth.token")):
        lines = server.log_lines()
        assert any(
            line.get("endpoint") == endpoint and line.get("client_id") in (None, client.client_id)
            for line in lines
            if line["logger"] == "credits_id.access"
        )


def test_revoke_on_b_and_logout_on_a(pair, settings):
    a, b = pair
    discovery = requests.get(a("/.well-known/openid-configuration"), timeout=30).json()
    assert discovery["revocation_endpoint"] == settings["ISSUER_URL"] + "/api/auth/oauth2/revoke"
    assert discovery["end_session_endpoint"] == settings["ISSUER_URL"] + "/api/auth/oauth2/endsession"
    member = make_member()
    client, secret = make_client(post_logout_redirect_uris=[REDIRECT_URI + "/logged-out"])
    rp_a = RelyingParty(a.url, client.client_id, secret)
    params, browser = sign_in(a.url, rp_a, member.email, scope="openid profile offline_access")
    rp_b = RelyingParty(b.url, client.client_id, secret, verifier=rp_a.verifier)
    tokens = rp_b.exchange(params["code"]).json()

    # Revoke the refresh token on B (RFC 7009): it, and the grant's access token, stop working on A.
    revoke_b = discovery["revocation_endpoint"].replace(settings["ISSUER_URL"], b.url)
    response = requests.post(
        revoke_b,
        data={"token": tokens["refresh_token"], "token_type_hint": "refresh_token"},
        auth=(client.client_id, secret),
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert rp_a.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    db.session.expire_all()
    assert all(
        row.revoked_at is not None for row in db.session.scalars(select(Token).where(Token.client_id == client.id))
    )

    # Log out on A (RP-initiated logout): the provider session ends for every process.
    end_session_a = discovery["end_session_endpoint"].replace(settings["ISSUER_URL"], a.url)
    # A valid hint from this app: no confirmation page, straight back to the registered URI.
    response = browser.follow(
        browser.get(
            end_session_a,
            params={
                "id_token_hint": tokens["id_token"],
                "client_id": client.client_id,
                "post_logout_redirect_uri": REDIRECT_URI + "/logged-out",
                "state": "bye",
            },
        )
    )
    assert response.status_code in (302, 303), response.text[:300]
    assert response.headers["Location"].startswith(REDIRECT_URI + "/logged-out")
    assert query(response.headers["Location"]).get("state") == "bye"
    db.session.expire_all()
    sessions = db.session.scalars(select(LoginSession).where(LoginSession.user_id == member.id)).all()
    assert sessions and all(s.ended_at is not None for s in sessions)
    on_b = Browser(b.url, session=browser.session).get("/signed-in")
    assert on_b.status_code == 302 and "/login" in on_b.headers["Location"]
