"""The key door over real HTTP against the production server: each gateway error and limit as a
client sees it, responses validated against the OpenAPI document, and a per-key budget shared by
two server processes through Redis."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
import requests
from openapi_core import OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse

from app.core.extensions import db
from app.models import ApiUsage
from app.web.api.openapi import openapi_document
from tests.api_support import make_catalog, member_with_token, uid
from tests.conftest import free_port, redis_test_url, start_server, unavailable
from tests.factories import db_state
from tests.key_support import index_catalog, make_key

pytestmark = pytest.mark.live
REDIS_URL = redis_test_url(5)  # the key-door tests' Redis database
LIMIT_HEADERS = (
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit-Minute",
    "X-RateLimit-Remaining-Minute",
    "X-Gateway-Request-Id",
    "x-service-version",
)


@pytest.fixture(scope="module")
def spec():
    return OpenAPI.from_dict(openapi_document())


def validated(spec, response: requests.Response) -> requests.Response:
    spec.validate_response(RequestsOpenAPIRequest(response.request), RequestsOpenAPIResponse(response))
    for name in LIMIT_HEADERS:
        assert name in response.headers, (name, response.status_code, response.request.url)
    return response


def gateway_body(response: requests.Response, status: int, message: str) -> None:
    assert response.status_code == status, response.text
    assert response.json() == {"message": message, "request_id": response.headers["X-Gateway-Request-Id"]}
    assert "result" not in response.text


def test_what_a_client_sees_at_the_key_door(live_server, spec):
    catalog = make_catalog(credits=5)
    index_catalog()
    key, secret = make_key()
    _, publishable = make_key("publishable", domains=["widgets.example"])
    base = live_server.url
    session = requests.Session()

    ok = validated(spec, session.get(f"{base}/v1/track/isrc/USAAA2000000", headers={"x-api-key": secret}, timeout=30))
    assert ok.status_code == 200 and ok.json()["data"]["id"] == uid(1, 2)
    found = validated(
        spec,
        session.post(
            f"{base}/v1/search",
            json={"keyword": "otto", "type": ["profile"]},
            headers={"x-api-key": secret},
            timeout=30,
        ),
    )
    assert found.json()["data"]["profiles"]["items"][0]["id"] == catalog.other

    gateway_body(validated(spec, session.get(f"{base}/v1/roles", timeout=30)), 401, "No API key found in request")
    # The paths an access token may use too: the gateway's refusal, with the RFC 6750 challenge kept.
    for path in (f"/v1/profile/{uid(1, 1)}", f"/v1/profile/{uid(1, 1)}/credits", f"/v1/profile/{uid(1, 1)}/charts"):
        bare = validated(spec, session.get(f"{base}{path}", timeout=30))
        gateway_body(bare, 401, "No API key found in request")
        assert bare.headers["WWW-Authenticate"].startswith('Bearer realm="')
    gateway_body(
        validated(spec, session.get(f"{base}/v1/roles", headers={"x-api-key": "msk_nope"}, timeout=30)),
        401,
        "Unauthorized",
    )
    gateway_body(
        validated(spec, session.get(f"{base}/v1/roles", headers={"x-api-key": publishable}, timeout=30)),
        403,
        "You cannot consume this service",
    )
    widget = validated(
        spec,
        session.get(
            f"{base}/embed/v1/profile/{catalog.other}/charts",
            headers={"x-api-key": publishable, "Origin": "https://widgets.example"},
            timeout=30,
        ),
    )
    assert widget.status_code == 200 and widget.headers["Access-Control-Allow-Origin"] == "*"

    too_big = validated(
        spec,
        session.get(f"{base}/v1/profile/{catalog.mine}/credits?limit=51", headers={"x-api-key": secret}, timeout=30),
    )
    assert too_big.json() == {  # the spec's message, and the offending parameter beside it (validated above)
        "result": "error",
        "code": 400,
        "message": "Too big page, max page size is 50",
        "param": "limit",
    }
    bad = validated(
        spec,
        session.post(
            f"{base}/v1/search",
            data="{not json",
            headers={"x-api-key": secret, "Content-Type": "application/json"},
            timeout=30,
        ),
    )
    assert bad.json() == {"result": "error", "code": 400, "message": "Invalid parameters supplied", "param": "body"}
    missing = validated(spec, session.get(f"{base}/v1/album/upc/000", headers={"x-api-key": secret}, timeout=30))
    assert missing.json() == {"result": "error", "code": 404, "message": "Not found"}

    db.session.expire_all()
    counted = db.session.scalar(db.select(db.func.sum(ApiUsage.count)).where(ApiUsage.key_id == key.id))
    # The two 200s and the 404 (a lookup that matched nothing is a call); neither the two 400s (the
    # API refused the input) nor the gateway's refusals are metered.
    assert counted == 3
    # The key is in no log line and nowhere in the database (only its hash is).
    assert secret not in live_server.log_text() and publishable not in live_server.log_text()
    assert secret not in str(db_state()) and publishable not in str(db_state())


def test_an_access_token_reads_nothing_of_the_catalog_over_http(live_server, spec):
    """A valid sign-in token of the member whose profile is `mine`: every catalog path about
    anyone else, or catalog-wide, is 403 with no data; its own profile still answers."""
    catalog = make_catalog(credits=5)
    index_catalog()
    _, _, token = member_with_token("pro", catalog.mine)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    base = live_server.url
    paths = [
        f"/v1/profile/{catalog.other}",
        f"/v1/profile/{catalog.other}/credits",
        f"/v1/profile/{catalog.other}/charts",
        f"/v1/profile/{catalog.other}/collaborators",
        f"/v1/profile/{catalog.mine}/collaborators",
        f"/v1/track/id/{uid(1, 2)}",
        "/v1/track/isrc/USAAA2000000/albums",
        "/v1/album/upc/000000000000",
        f"/v1/album/id/{uid(1, 3)}/credits",
        "/v1/search/autocomplete?q=a",
        "/v1/roles",
        f"/v1/profiles/search?names=otto&track_ids={uid(1, 2)}",
    ]
    for path in paths:
        response = validated(spec, session.get(base + path, timeout=30))
        assert response.status_code == 403 and "data" not in response.json(), (path, response.text)
    searched = session.post(base + "/v1/search", json={"keyword": "otto"}, timeout=30)
    assert searched.status_code == 403 and 'error="insufficient_scope"' in searched.headers["WWW-Authenticate"]
    widget = session.get(f"{base}/embed/v1/profile/{catalog.mine}", timeout=30)
    gateway_body(widget, 401, "No API key found in request")
    assert validated(spec, session.get(f"{base}/v1/profile/{catalog.mine}", timeout=30)).status_code == 200


def test_the_start_plan_is_5_a_second_then_429_with_retry_after(live_server, spec):
    make_catalog(credits=1)
    _, start = make_key(plan="start")
    session = requests.Session()
    for _attempt in range(3):
        while time.time() % 1 > 0.3:  # start early in a second so the burst fits in one window
            time.sleep(0.02)
        burst = [session.get(f"{live_server.url}/v1/roles", headers={"x-api-key": start}, timeout=30) for _ in range(6)]
        if [r.status_code for r in burst] == [200] * 5 + [429]:
            break
        time.sleep(1.1)  # the burst crossed a second boundary (a slow machine): again, in a fresh window
    assert [r.status_code for r in burst] == [200] * 5 + [429]
    refused = validated(spec, burst[5])
    gateway_body(refused, 429, "API rate limit exceeded: 5 per second for this key")
    assert refused.headers["Retry-After"] == "1" and refused.headers["RateLimit-Remaining"] == "0"


@pytest.fixture
def two_servers(settings, tmp_path_factory):
    """Two server processes over the same database, counting in the same Redis database."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=5).ping()
    except redis.RedisError:
        unavailable("no Redis at " + REDIS_URL, "the Redis tests")
    logs: Path = tmp_path_factory.mktemp("key-budget-logs")
    procs, urls = [], []
    try:
        for n in range(2):
            port = free_port()
            procs.append(start_server(settings, port, logs / f"server{n}.log", REDIS_URL=REDIS_URL))
            urls.append(f"http://127.0.0.1:{port}")
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)


def test_a_keys_budget_is_shared_by_every_server_process(two_servers):
    make_catalog(credits=1)
    key, start = make_key(plan="start")
    store = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    sessions = [requests.Session(), requests.Session()]
    try:
        for _attempt in range(3):
            while time.time() % 1 > 0.3:
                time.sleep(0.02)
            statuses = [
                sessions[n % 2]
                .get(f"{two_servers[n % 2]}/v1/roles", headers={"x-api-key": start}, timeout=30)
                .status_code
                for n in range(6)
            ]
            if statuses == [200] * 5 + [429]:
                break
            time.sleep(1.1)
        assert statuses == [200] * 5 + [429]
        assert list(store.scan_iter(match=f"*{key.id}*")), "the count lives in Redis, by key id"
        assert not list(store.scan_iter(match=f"*{start}*")), "never the key itself"
    finally:
        for k in store.scan_iter(match=f"*{key.id}*"):
            store.delete(k)
