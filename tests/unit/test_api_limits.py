"""The /v1 budget and the headers every /v1 response carries; sign-in traffic is not counted."""

from __future__ import annotations

import logging
import re

import pytest

from app.core.extensions import db, limiter
from app.models import Token
from app.models.base import sha256_hex
from tests.api_support import bearer, make_catalog, member_with_token, mint_token

LIMIT_HEADERS = (
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit-Minute",
    "X-RateLimit-Remaining-Minute",
)


@pytest.fixture
def catalog():
    return make_catalog(credits=5)


@pytest.fixture
def token(catalog):
    return member_with_token("pro", catalog.mine)[2]


def remaining(response) -> int:
    return int(response.headers["RateLimit-Remaining"])


@pytest.mark.parametrize(
    "path, status",
    [
        ("/v1/me", 200),
        ("/v1/me/credits", 200),
        ("/v1/me/analytics", 200),
        ("/v1/me/credits?limit=51", 400),
        ("/v1/profile/00000000-0000-4000-8000-000000000000", 403),
        ("/v1/profile/nope", 404),
        ("/v1/nope", 404),
    ],
)
def test_every_response_carries_the_limit_request_id_and_version_headers(client, token, path, status):
    response = client.get(path, headers=bearer(token))
    assert response.status_code == status
    assert response.headers["RateLimit-Limit"] == response.headers["X-RateLimit-Limit-Minute"] == "300"
    assert response.headers["RateLimit-Remaining"] == response.headers["X-RateLimit-Remaining-Minute"] == "299"
    assert 1 <= int(response.headers["RateLimit-Reset"]) <= 60  # seconds, not a timestamp
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["X-Request-Id"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", response.headers["x-service-version"])


def test_unauthenticated_responses_carry_them_too(client, catalog):
    response = client.get("/v1/me")
    assert response.status_code == 401
    assert all(name in response.headers for name in LIMIT_HEADERS)


def test_the_budget_counts_down_per_token(client, token, catalog):
    seen = [remaining(client.get("/v1/me", headers=bearer(token))) for _ in range(4)]
    assert seen == [299, 298, 297, 296]
    other = member_with_token("pro", catalog.mine)[2]
    assert remaining(client.get("/v1/me", headers=bearer(other))) == 299


def test_request_id_is_echoed_when_sane(client, token, caplog):
    for sane in ("support-ticket-42", "dGVzdC9pZA+/=="):
        with caplog.at_level(logging.INFO, logger="credits_id.access"):
            response = client.get("/v1/me", headers={**bearer(token), "X-Request-Id": sane})
        # One id for the request: echoed under both names, and on its access line.
        assert response.headers["X-Request-Id"] == response.headers["X-Gateway-Request-Id"] == sane
        assert [r.request_id for r in caplog.records if r.name == "credits_id.access"][-1] == sane
    for junk in ("has space", "x" * 129, "semi;colon", "\u00e9t\u00e9".encode().decode("latin-1"), ""):
        response = client.get("/v1/me", headers={**bearer(token), "X-Request-Id": junk})
        assert re.fullmatch(r"[0-9a-f]{32}", response.headers["X-Request-Id"]), junk
        assert response.headers["X-Gateway-Request-Id"] == response.headers["X-Request-Id"]


def test_beyond_the_budget_is_429_with_retry_after(app, client, token, catalog, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 3)
    for expected in (2, 1, 0):
        response = client.get("/v1/me", headers=bearer(token))
        assert response.status_code == 200 and remaining(response) == expected
    for _ in range(2):
        response = client.get("/v1/me/credits", headers=bearer(token))
        assert response.status_code == 429
        body = response.get_json()
        assert body["result"] == "error" and body["code"] == 429
        assert "3 per minute" in body["message"]
        assert 1 <= int(response.headers["Retry-After"]) <= 60
        assert response.headers["Retry-After"] == response.headers["RateLimit-Reset"]
        assert response.headers["RateLimit-Remaining"] == "0" and response.headers["RateLimit-Limit"] == "3"
        assert response.headers["X-Request-Id"]
    # Another token of the same member has its own budget.
    assert client.get("/v1/me", headers=bearer(member_with_token("pro", catalog.mine)[2])).status_code == 200


def test_requests_without_a_token_are_counted_by_address(app, client, catalog, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 2)
    address = {"REMOTE_ADDR": "192.0.2.77"}
    assert [client.get("/v1/me", environ_base=address).status_code for _ in range(3)] == [401, 401, 429]
    assert client.get("/v1/me", environ_base={"REMOTE_ADDR": "192.0.2.78"}).status_code == 401


def test_made_up_tokens_draw_on_the_senders_address_budget(app, client, token, catalog, monkeypatch):
    """Counted by token value, a new made-up token per request would never run out (and each
    costs a lookup). Refused tokens spend their address's budget; real tokens do not."""
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 3)
    prober, member = {"REMOTE_ADDR": "192.0.2.90"}, {"REMOTE_ADDR": "192.0.2.91"}
    statuses = [client.get("/v1/me", headers=bearer(f"made-up-{i}"), environ_base=prober).status_code for i in range(5)]
    assert statuses == [401, 401, 401, 429, 429]
    refused = client.get("/v1/me", headers=bearer("made-up-9"), environ_base=prober)
    assert "each address without a valid access token" in refused.get_json()["message"]
    # A valid token from another address is untouched, and spends only its own budget.
    assert [client.get("/v1/me", headers=bearer(token), environ_base=member).status_code for _ in range(3)] == [200] * 3


def test_a_refreshed_token_continues_its_sign_ins_budget(app, client, catalog, monkeypatch):
    """Refreshing gives a new access token of the same grant: it must not start a fresh budget."""
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 3)
    user, app_client, first = member_with_token("pro", catalog.mine)
    grant = db.session.scalar(db.select(Token.grant_id).where(Token.access_token_hash == sha256_hex(first)))
    assert [remaining(client.get("/v1/me", headers=bearer(first))) for _ in range(2)] == [2, 1]
    refreshed = mint_token(user, app_client, grant_id=grant)
    assert remaining(client.get("/v1/me", headers=bearer(refreshed))) == 0
    over = client.get("/v1/me", headers=bearer(refreshed))
    assert over.status_code == 429 and "its refreshed tokens included" in over.get_json()["message"]


def test_sign_in_traffic_is_not_counted(client, token):
    first = remaining(client.get("/v1/me", headers=bearer(token)))
    sign_in = [
        client.get("/.well-known/openid-configuration"),
        client.get("/api/auth/jwks"),
        client.get("/api/auth/oauth2/userinfo", headers=bearer(token)),  # the same token
        client.post("/api/auth/oauth2/userinfo", headers=bearer(token)),
        client.post("/api/auth/oauth2/token", data={"grant_type": "authorization_code", "code": "x"}),
        client.get("/api/auth/oauth2/authorize?client_id=nope"),
        client.get("/openapi.yaml"),
    ]
    for response in sign_in:
        assert not any(name in response.headers for name in LIMIT_HEADERS), response.request.path
    assert remaining(client.get("/v1/me", headers=bearer(token))) == first - 1


def test_a_broken_counter_store_does_not_take_the_api_down(client, token, monkeypatch):
    def unavailable(*args, **kwargs):
        raise ConnectionError("storage down")

    monkeypatch.setattr(limiter.limiter, "hit", unavailable)
    response = client.get("/v1/me", headers=bearer(token))
    assert response.status_code == 200
    assert "RateLimit-Limit" not in response.headers  # nothing was counted, so no figures are claimed
    assert response.headers["X-Request-Id"]
