"""Browser apps on their own origin: which answers their pages may read (app/web/cors.py).

A browser app is a public client: it redeems its code with PKCE and its client_id in the form
body, then calls userinfo and /v1 with the access token. Pages of other sites get no CORS
headers from the token endpoint, and no page gets them from the provider's own pages."""

import pytest
import requests

from app.web.cors import web_origin
from tests.factories import REDIRECT_URI, make_client
from tests.flows import TOKEN, USERINFO, RelyingParty, sign_in

APP_ORIGIN = "http://127.0.0.1:7199"  # the origin of REDIRECT_URI
REVOKE = "/api/auth/oauth2/revoke"


@pytest.fixture
def spa(live_server, member):
    """A public client's freshly redeemed tokens, redeemed from its own origin."""
    client, _ = make_client(public=True)
    rp = RelyingParty(live_server.url, client.client_id, None)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile credits:read offline_access")
    response = requests.post(
        live_server(TOKEN),
        headers={"Origin": APP_ORIGIN},
        timeout=30,
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": rp.verifier,
            "client_id": client.client_id,
        },
    )
    return rp, response


def test_a_browser_app_reads_its_token_response_from_its_own_origin(spa):
    _, response = spa
    assert response.status_code == 200 and "access_token" in response.json()
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    assert "Origin" in response.headers["Vary"]
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_other_sites_cannot_read_an_apps_token_answers(live_server, spa):
    rp, _tokens = spa
    for origin in ("https://evil.example", "http://127.0.0.1:7198", "null"):
        refreshed = requests.post(
            live_server(TOKEN),
            headers={"Origin": origin},
            timeout=30,
            data={"grant_type": "refresh_token", "refresh_token": "not-a-token", "client_id": rp.client_id},
        )
        assert refreshed.status_code == 400
        assert "Access-Control-Allow-Origin" not in refreshed.headers
        assert "Origin" in refreshed.headers["Vary"]


def test_no_preflight_for_the_token_endpoint(live_server, spa):
    """A browser app needs none (form body, no Authorization header); allowing one would let a
    page send a client secret from the browser."""
    preflight = requests.options(
        live_server(TOKEN),
        timeout=30,
        headers={
            "Origin": APP_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert "Access-Control-Allow-Origin" not in preflight.headers


def test_revocation_from_the_apps_origin(live_server, spa):
    rp, tokens = spa
    response = requests.post(
        live_server(REVOKE),
        headers={"Origin": APP_ORIGIN},
        timeout=30,
        data={"token": tokens.json()["refresh_token"], "client_id": rp.client_id},
    )
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN


@pytest.mark.parametrize("path", [USERINFO, "/v1/me"])
def test_bearer_endpoints_answer_any_origin_without_cookies(live_server, spa, path):
    _, tokens = spa
    origin = "https://app.example"
    preflight = requests.options(
        live_server(path),
        timeout=30,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
    assert "GET" in preflight.headers["Access-Control-Allow-Methods"]
    bearer = {"Authorization": f"Bearer {tokens.json()['access_token']}", "Origin": origin}
    answer = requests.get(live_server(path), headers=bearer, timeout=30)
    # This member has no catalog profile linked: /v1/me answers the API's own 404, readable too.
    assert answer.status_code == (200 if path == USERINFO else 404)
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in answer.headers
    denied = requests.get(live_server(path), headers={"Origin": origin}, timeout=30)
    assert denied.status_code == 401
    assert "WWW-Authenticate" in denied.headers["Access-Control-Expose-Headers"]
    assert "x-service-version" in denied.headers["Access-Control-Expose-Headers"]


def test_a_preflight_does_not_spend_the_api_budget(live_server, spa):
    _, tokens = spa
    bearer = {"Authorization": f"Bearer {tokens.json()['access_token']}"}
    first = int(requests.get(live_server("/v1/me"), headers=bearer, timeout=30).headers["RateLimit-Remaining"])
    for _ in range(3):
        requests.options(
            live_server("/v1/me"),
            timeout=30,
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
        )
    second = int(requests.get(live_server("/v1/me"), headers=bearer, timeout=30).headers["RateLimit-Remaining"])
    assert second == first - 1


@pytest.mark.parametrize("path", ["/login", "/account", "/console", "/api/auth/oauth2/introspect"])
def test_pages_and_introspection_carry_no_cors_headers(live_server, path):
    response = requests.get(
        live_server(path), headers={"Origin": "https://evil.example"}, timeout=30, allow_redirects=False
    )
    assert not any(name.lower().startswith("access-control-") for name in response.headers)


@pytest.mark.parametrize(
    ("uri", "origin"),
    [
        ("https://spa.example/callback", "https://spa.example"),
        ("https://SPA.example:443/cb?x=1", "https://spa.example"),
        ("http://127.0.0.1:7199/cb", "http://127.0.0.1:7199"),
        ("http://localhost:80/cb", "http://localhost"),
        ("http://[::1]:8080/cb", "http://[::1]:8080"),
        ("com.example.app:/oauth2redirect", None),
        ("https://spa.example:99999/cb", None),
    ],
)
def test_the_origin_of_a_redirect_uri(uri, origin):
    assert web_origin(uri) == origin
