"""The data API over real HTTP against the production server, with tokens from the real sign-in
flow: what an app sees, membership changes biting at once, and a budget shared by several server processes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis
import requests
from openapi_core import OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse

from app.core.extensions import db
from app.models import Token
from app.models.base import sha256_hex
from app.web.api.openapi import openapi_document
from tests.api_support import make_catalog, mint_token
from tests.conftest import free_port, redis_test_url, start_server, unavailable
from tests.factories import make_client, make_member
from tests.flows import RelyingParty, sign_in

pytestmark = pytest.mark.live
REDIS_URL = redis_test_url(3)  # this branch's Redis database


def call(base: str, path: str, token: str | None, **kw) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(base + path, headers={**headers, **kw.pop("headers", {})}, timeout=30, **kw)


def validated(spec: OpenAPI, response: requests.Response) -> requests.Response:
    spec.validate_response(RequestsOpenAPIRequest(response.request), RequestsOpenAPIResponse(response))
    return response


def tokens_for(live_server, email: str, scope: str, client_id: str, secret: str) -> dict:
    rp = RelyingParty(live_server.url, client_id, secret)
    params, _ = sign_in(live_server.url, rp, email, scope=scope)
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    return response.json()


def set_tier(app, email: str, tier: str) -> None:
    result = app.test_cli_runner().invoke(args=["users", "set-tier", email, tier])
    assert result.exit_code == 0, result.output


def test_an_app_reads_its_members_own_data_and_a_downgrade_bites_at_once(app, live_server):
    spec = OpenAPI.from_dict(openapi_document())
    catalog = make_catalog(credits=60)
    member = make_member(tier="pro", profile_id=catalog.mine)
    client, secret = make_client()
    issued = tokens_for(
        live_server, member.email, "openid credits:read analytics:read offline_access", client.client_id, secret
    )
    assert set(issued["scope"].split()) >= {"credits:read", "analytics:read"}
    token = issued["access_token"]

    me = validated(spec, call(live_server.url, "/v1/me", token, headers={"X-Request-Id": "trace-1"}))
    assert me.status_code == 200 and me.json()["data"]["id"] == catalog.mine
    assert me.headers["X-Request-Id"] == "trace-1" and me.headers["RateLimit-Limit"] == "300"
    assert me.headers["Cache-Control"] == "no-store"

    walked, offset = [], 0
    while True:
        page = validated(spec, call(live_server.url, f"/v1/me/credits?limit=50&offset={offset}", token)).json()["data"]
        if offset >= page["totalCount"]:
            assert page["items"] == []
            break
        walked += [(r["track"]["id"], r["album"]["id"]) for r in page["items"]]
        offset += 50
    assert walked == catalog.newest_first

    assert validated(spec, call(live_server.url, "/v1/me/analytics", token)).status_code == 200
    other = validated(spec, call(live_server.url, f"/v1/profile/{catalog.other}/credits", token))
    assert other.status_code == 403 and other.json()["result"] == "error"

    set_tier(app, member.email, "basic")
    refused = validated(spec, call(live_server.url, "/v1/me/analytics", token))
    assert refused.status_code == 403
    assert refused.json()["message"] == "Your basic membership plan does not include analytics"
    assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
    assert call(live_server.url, "/v1/me/credits", token).status_code == 200

    # A refreshed token is no way around it: the membership is read on every request.
    refreshed = RelyingParty(live_server.url, client.client_id, secret).refresh(issued["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    assert call(live_server.url, "/v1/me/analytics", refreshed.json()["access_token"]).status_code == 403


def test_an_upgrade_adds_nothing_until_the_member_consents_again(app, live_server):
    catalog = make_catalog(credits=3)
    member = make_member(tier="basic", profile_id=catalog.mine)
    client, secret = make_client()
    wanted = "openid credits:read analytics:read"
    first = tokens_for(live_server, member.email, wanted, client.client_id, secret)
    assert "analytics:read" not in first["scope"].split()  # basic: not granted at consent

    set_tier(app, member.email, "pro")
    response = call(live_server.url, "/v1/me/analytics", first["access_token"])
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    assert 'scope="analytics:read"' in response.headers["WWW-Authenticate"]

    second = tokens_for(live_server, member.email, wanted, client.client_id, secret)
    assert "analytics:read" in second["scope"].split()
    assert call(live_server.url, "/v1/me/analytics", second["access_token"]).status_code == 200


def test_sign_in_endpoints_are_not_metered(live_server):
    catalog = make_catalog(credits=3)
    member = make_member(tier="pro", profile_id=catalog.mine)
    client, secret = make_client()
    token = tokens_for(live_server, member.email, "openid profile credits:read", client.client_id, secret)
    before = int(call(live_server.url, "/v1/me", token["access_token"]).headers["RateLimit-Remaining"])
    for path in ("/.well-known/openid-configuration", "/api/auth/jwks", "/api/auth/oauth2/userinfo"):
        response = call(live_server.url, path, token["access_token"])
        assert response.status_code == 200 and "RateLimit-Remaining" not in response.headers
    after = int(call(live_server.url, "/v1/me", token["access_token"]).headers["RateLimit-Remaining"])
    assert after == before - 1


@pytest.fixture
def two_servers(settings, tmp_path_factory):
    """Two server processes over the same database, counting in the same Redis database."""
    logs: Path = tmp_path_factory.mktemp("budget-logs")
    procs, urls = [], []
    try:
        for n in range(2):
            port = free_port()
            procs.append(
                start_server(
                    settings, port, logs / f"server{n}.log", REDIS_URL=REDIS_URL, API_RATE_LIMIT_PER_MINUTE="5"
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)


def test_the_budget_is_shared_by_every_server_process(two_servers):
    try:
        store = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
        store.ping()
    except redis.RedisError:
        unavailable("no Redis at " + REDIS_URL, "the Redis tests")
    catalog = make_catalog(credits=3)
    member = make_member(tier="pro", profile_id=catalog.mine)
    client, _ = make_client()
    token = mint_token(member, client)
    grant = db.session.scalar(db.select(Token.grant_id).where(Token.access_token_hash == sha256_hex(token)))
    first, second = two_servers
    try:
        response = call(first, "/v1/me", token)
        if int(response.headers["RateLimit-Reset"]) < 15:  # too close to the window's end: start afresh
            time.sleep(int(response.headers["RateLimit-Reset"]) + 1)
            response = call(first, "/v1/me", token)
        seen = [int(response.headers["RateLimit-Remaining"])]
        for base in (second, first, second, first):
            response = call(base, "/v1/me", token)
            seen.append(int(response.headers.get("RateLimit-Remaining", -1)))
        assert seen == [4, 3, 2, 1, 0]
        for base in (second, first):
            refused = call(base, "/v1/me", token)
            assert refused.status_code == 429
            assert refused.json() == {
                "result": "error",
                "code": 429,
                "message": "Too many requests: the budget is 5 per minute for each sign-in of a member to an app (its refreshed tokens included)",
            }
            assert 1 <= int(refused.headers["Retry-After"]) <= 60
        keys = [k.decode() for k in store.scan_iter(match=f"*{grant}*")]
        assert keys, "the count lives in Redis, by grant"
        assert json.dumps(keys).find(token) == -1  # the store holds the grant id, never the token
    finally:
        for key in store.scan_iter(match=f"*{grant}*"):
            store.delete(key)
