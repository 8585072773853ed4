"""One client per request at the token, revocation and introspection endpoints, authenticated one
way (RFC 6749 2.3 and 3.2): a request naming two clients, or carrying credentials twice or in the
URL, is refused before anything happens; CORS and the throttle see the client that authenticates,
never a decoy named elsewhere in the request."""

from __future__ import annotations

import pytest
import requests

from app.core.extensions import limiter
from tests.factories import REDIRECT_URI, db_state, make_client
from tests.flows import TOKEN, RelyingParty, sign_in
from tests.issued import separate_app

INTROSPECT = "/api/auth/oauth2/introspect"
REVOKE = "/api/auth/oauth2/revoke"
APP_ORIGIN = "http://127.0.0.1:7199"  # the origin of REDIRECT_URI
DECOY_ORIGIN = "https://decoy.example"


def assert_invalid_request(response, says: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "invalid_request" and says in body["error_description"]
    assert "Access-Control-Allow-Origin" not in response.headers


@pytest.fixture
def code(live_server, member):
    """A confidential app with a fresh code, and a public decoy app on another origin."""
    client, secret = make_client()
    decoy, _ = make_client(public=True, redirect_uris=[DECOY_ORIGIN + "/cb"])
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid")
    return rp, params["code"], decoy


def exchange_data(rp: RelyingParty, code: str) -> dict:
    return {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "code_verifier": rp.verifier,
    }


def test_basic_and_a_secret_in_the_body_is_refused_even_with_the_right_secret(live_server, code):
    rp, the_code, _ = code
    before = db_state()
    for body_secret in ("wrong", rp.client_secret):
        response = requests.post(
            live_server(TOKEN),
            timeout=30,
            auth=(rp.client_id, rp.client_secret),
            data={**exchange_data(rp, the_code), "client_secret": body_secret},
        )
        assert_invalid_request(response, "one client authentication method")
    assert db_state() == before  # the code is not spent
    assert rp.exchange(the_code).status_code == 200


def test_credentials_in_the_url_are_refused(live_server, code):
    rp, the_code, _ = code
    response = requests.post(
        live_server(TOKEN),
        params={"client_secret": rp.client_secret},
        timeout=30,
        data={**exchange_data(rp, the_code), "client_id": rp.client_id},
    )
    assert_invalid_request(response, "never in the URL")
    assert rp.exchange(the_code).status_code == 200


@pytest.mark.parametrize("where", ["query", "body"])
def test_a_request_naming_another_client_beside_the_one_that_authenticates_is_refused(live_server, code, where):
    rp, the_code, decoy = code
    kwargs = {"params": {"client_id": decoy.client_id}} if where == "query" else {}
    data = exchange_data(rp, the_code) | ({"client_id": decoy.client_id} if where == "body" else {})
    response = requests.post(
        live_server(TOKEN),
        timeout=30,
        auth=(rp.client_id, rp.client_secret),
        headers={"Origin": DECOY_ORIGIN},
        data=data,
        **kwargs,
    )
    assert_invalid_request(response, "more than one client")
    assert rp.exchange(the_code).status_code == 200


def test_a_public_client_named_in_the_query_and_another_in_the_body_is_refused(live_server, member):
    """The reproduction: CORS used to answer the body's app while the query's app authenticated."""
    spa, _ = make_client(public=True)
    decoy, _ = make_client(public=True, redirect_uris=[DECOY_ORIGIN + "/cb"])
    rp = RelyingParty(live_server.url, spa.client_id, None)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid")
    response = requests.post(
        live_server(TOKEN),
        params={"client_id": spa.client_id},
        timeout=30,
        headers={"Origin": DECOY_ORIGIN},
        data={**exchange_data(rp, params["code"]), "client_id": decoy.client_id},
    )
    assert_invalid_request(response, "more than one client")
    # Named once (query and body agreeing), the app that authenticates gets its own origin only.
    agreeing = requests.post(
        live_server(TOKEN),
        params={"client_id": spa.client_id},
        timeout=30,
        headers={"Origin": APP_ORIGIN},
        data={**exchange_data(rp, params["code"]), "client_id": spa.client_id},
    )
    assert agreeing.status_code == 200 and agreeing.headers["Access-Control-Allow-Origin"] == APP_ORIGIN


def test_cors_answers_the_origin_of_the_client_that_authenticated_only(live_server, code):
    rp, the_code, _ = code
    for origin in (DECOY_ORIGIN, "https://evil.example"):
        wrong = requests.post(
            live_server(TOKEN),
            headers={"Origin": origin},
            timeout=30,
            auth=(rp.client_id, rp.client_secret),
            data=exchange_data(rp, "not-a-code"),
        )
        assert wrong.status_code == 400 and "Access-Control-Allow-Origin" not in wrong.headers
    unauthenticated = requests.post(
        live_server(TOKEN),
        headers={"Origin": APP_ORIGIN},
        timeout=30,
        auth=(rp.client_id, "wrong secret"),
        data=exchange_data(rp, the_code),
    )
    assert unauthenticated.status_code == 401 and "Access-Control-Allow-Origin" not in unauthenticated.headers
    right = requests.post(
        live_server(TOKEN),
        headers={"Origin": APP_ORIGIN},
        timeout=30,
        auth=(rp.client_id, rp.client_secret),
        data=exchange_data(rp, the_code),
    )
    assert right.status_code == 200 and right.headers["Access-Control-Allow-Origin"] == APP_ORIGIN


def test_a_client_id_sent_twice_is_refused(live_server, member):
    spa, _ = make_client(public=True)
    response = requests.post(
        live_server(TOKEN),
        timeout=30,
        data=[
            ("grant_type", "authorization_code"),
            ("code", "x"),
            ("client_id", spa.client_id),
            ("client_id", spa.client_id),
        ],
    )
    assert_invalid_request(response, "must be sent once")


@pytest.mark.parametrize("path", [REVOKE, INTROSPECT])
def test_revocation_and_introspection_take_one_method_and_one_client_too(live_server, path):
    client, secret = make_client()
    decoy, _ = make_client(public=True)
    both = requests.post(
        live_server(path), timeout=30, auth=(client.client_id, secret), data={"token": "x", "client_secret": secret}
    )
    assert_invalid_request(both, "one client authentication method")
    two = requests.post(
        live_server(path),
        params={"client_id": decoy.client_id},
        timeout=30,
        auth=(client.client_id, secret),
        data={"token": "x"},
    )
    assert_invalid_request(two, "more than one client")
    assert (
        requests.post(live_server(path), timeout=30, auth=(client.client_id, secret), data={"token": "x"}).status_code
        == 200
    )


# -- the throttle counts the client that can authenticate, never a decoy -------------------------


@pytest.fixture
def web(settings, monkeypatch):
    app = separate_app(settings)
    monkeypatch.setitem(app.config, "TOKEN_CLIENT_LIMIT", "3 per minute")
    limiter.init_app(app)
    limiter.reset()
    yield app
    limiter.reset()


def test_a_decoy_client_id_does_not_spend_that_apps_budget(web):
    victim, victim_secret = make_client(name="Victim")
    other, other_secret = make_client(name="Other")
    data = {"grant_type": "authorization_code", "code": "nope", "code_verifier": "v" * 43}
    client = web.test_client()
    for _ in range(3):  # authenticated as Other while naming Victim in the query: refused, not Victim's count
        response = client.post(f"{TOKEN}?client_id={victim.client_id}", data=data, auth=(other.client_id, other_secret))
        assert response.status_code == 400 and response.json["error"] == "invalid_request"
    for _ in range(3):
        assert client.post(TOKEN, data=data, auth=(victim.client_id, victim_secret)).status_code == 400
    assert client.post(TOKEN, data=data, auth=(victim.client_id, victim_secret)).status_code == 429
