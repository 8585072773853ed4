"""The key door through the Flask test client: gateway errors in their own shape, entitlement
(publishable keys, the widget API and its domains), per-plan limits and their headers, the
`api_requests` meter, and the sign-in's reach kept to the member's own data on every path."""

from __future__ import annotations

import re

import pytest

from app.core.extensions import db, limiter
from app.models import ApiUsage, User
from tests.api_support import bearer, count_queries, make_catalog, member_with_token, uid
from tests.key_support import index_catalog, key_header, make_key

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py

GATEWAY_HEADERS = (
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit-Minute",
    "X-RateLimit-Remaining-Minute",
    "X-Gateway-Request-Id",
    "x-service-version",
)


@pytest.fixture
def catalog():
    made = make_catalog(credits=12)
    index_catalog()
    return made


def catalog_paths(catalog) -> list[tuple[str, str, dict]]:
    """Every catalog operation of the spec (method, path, request kwargs)."""
    return [
        ("get", f"/v1/profile/{catalog.other}", {}),
        ("get", f"/v1/profile/{catalog.other}/credits", {}),
        ("get", f"/v1/profile/{catalog.other}/charts", {}),
        ("get", f"/v1/profile/{catalog.other}/collaborators", {}),
        ("get", f"/v1/track/id/{uid(1, 2)}", {}),
        ("get", "/v1/track/isrc/USAAA2000000/albums", {}),
        ("get", "/v1/album/upc/000000000000", {}),
        ("get", f"/v1/album/id/{uid(1, 3)}/credits", {}),
        ("post", "/v1/search", {"json": {"keyword": "a"}}),
        ("get", "/v1/search/autocomplete?q=a", {}),
        ("get", "/v1/roles", {}),
        ("get", f"/v1/profiles/search?names=otto&track_ids={uid(1, 2)}", {}),
    ]


def assert_gateway_error(response, status, message):
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"message", "request_id"} and body["message"] == message
    assert body["request_id"] == response.headers["X-Gateway-Request-Id"]
    return body


def assert_headers(response):
    for name in GATEWAY_HEADERS:
        assert name in response.headers, (name, response.status_code)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", response.headers["x-service-version"])


def meter(key) -> int:
    return db.session.scalar(
        db.select(db.func.coalesce(db.func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == key.id)
    )


def test_every_catalog_path_answers_a_secret_key_with_the_headers(client, catalog):
    key, value = make_key()
    for method, path, kw in catalog_paths(catalog):
        response = getattr(client, method)(path, headers=key_header(value), **kw)
        assert response.status_code == 200, (path, response.get_data(as_text=True))
        assert response.get_json()["result"] == "ok"
        assert_headers(response)
        assert response.headers["RateLimit-Limit"] == "300"
    db.session.expire_all()
    assert meter(key) == len(catalog_paths(catalog))  # each request counted once


def test_no_key_is_401_no_api_key_found(client, catalog):
    for method, path, kw in catalog_paths(catalog)[3:]:  # the profile paths also admit bearer tokens
        response = getattr(client, method)(path, **kw)
        assert_gateway_error(response, 401, "No API key found in request")
        assert_headers(response)
    assert_gateway_error(client.get("/v1/roles", headers={"x-api-key": ""}), 401, "No API key found in request")


@pytest.mark.parametrize("value", ["nope", "msk_" + "A" * 43, "mpk_" + "B" * 43, "x" * 2000])
def test_an_unknown_key_is_401_unauthorized(client, catalog, value):
    for method, path, kw in catalog_paths(catalog):
        response = getattr(client, method)(path, headers=key_header(value), **kw)
        assert_gateway_error(response, 401, "Unauthorized")
        assert_headers(response)


def test_an_unknown_path_or_method_with_a_key_is_an_api_error_with_the_headers(client, catalog):
    key, value = make_key()
    for response, status in (
        (client.get("/v1/nope", headers=key_header(value)), 404),
        (client.delete("/v1/roles", headers=key_header(value)), 405),
        (client.get("/embed/v1/roles", headers=key_header(value)), 404),
    ):
        assert response.status_code == status and response.get_json()["result"] == "error"
        assert_headers(response)
    db.session.expire_all()
    assert meter(key) == 0  # the gateway never saw them


def test_a_revoked_key_is_401_unauthorized_at_once_and_is_not_metered(client, catalog):
    from app.services.apikeys import revoke_key

    key, value = make_key()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    revoke_key(key)
    db.session.commit()
    assert_gateway_error(client.get("/v1/roles", headers=key_header(value)), 401, "Unauthorized")
    db.session.expire_all()
    assert meter(key) == 1


def test_a_suspended_owners_key_is_refused_by_its_one_lookup_and_not_metered(client, catalog):
    """The owner's standing rides in the key's lookup (its owner joined): a paused key costs the
    door the one statement a live key's lookup costs, and no meter write."""
    from app.services.members import suspend_member, unsuspend_member

    key, value = make_key()
    with count_queries() as live:
        assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    suspend_member(db.session.get(User, key.owner_id))
    db.session.commit()
    with count_queries() as paused:
        assert_gateway_error(client.get("/v1/roles", headers=key_header(value)), 401, "Unauthorized")
    assert len(paused) == 1 and paused[0] == live[0] and "JOIN users" in paused[0]
    unsuspend_member(db.session.get(User, key.owner_id))
    db.session.commit()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    db.session.expire_all()
    assert meter(key) == 2


def test_a_publishable_key_on_the_paid_api_is_403(client, catalog):
    key, value = make_key("publishable", domains=["widgets.example"])
    for method, path, kw in catalog_paths(catalog):
        response = getattr(client, method)(path, headers=key_header(value, Origin="https://widgets.example"), **kw)
        assert_gateway_error(response, 403, "You cannot consume this service")
        assert_headers(response)
    db.session.expire_all()
    assert meter(key) == 0


@pytest.mark.parametrize("path", ["/v1/me", "/v1/me/credits", "/v1/me/analytics"])
def test_keys_have_no_member_so_the_sign_in_only_paths_refuse_them(client, catalog, path):
    _, value = make_key()
    assert_gateway_error(client.get(path, headers=key_header(value)), 403, "You cannot consume this service")
    assert_gateway_error(client.get(path, headers=key_header("bogus")), 401, "Unauthorized")


def test_the_widget_api_takes_publishable_keys_from_their_domains(client, catalog):
    key, value = make_key("publishable", domains=["widgets.example", "shop.example:8443"])
    for origin in ({"Origin": "https://widgets.example"}, {"Referer": "https://shop.example:8443/page?x=1"}):
        for suffix in ("", "/credits", "/charts"):
            response = client.get(f"/embed/v1/profile/{catalog.other}{suffix}", headers=key_header(value, **origin))
            assert response.status_code == 200, response.get_data(as_text=True)
            assert_headers(response)
    for origin in (
        {},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Referer": "widgets.example"},
        {"Origin": "https://widgets.example.evil.example"},
        {"Referer": "ftp://widgets.example/"},
    ):
        response = client.get(f"/embed/v1/profile/{catalog.other}", headers=key_header(value, **origin))
        assert_gateway_error(response, 403, "You cannot consume this service")
    db.session.expire_all()
    assert meter(key) == 6
    # A secret key is fine on the widget API, from anywhere; no key is 401.
    _, secret = make_key()
    assert client.get(f"/embed/v1/profile/{catalog.other}/charts", headers=key_header(secret)).status_code == 200
    assert_gateway_error(client.get(f"/embed/v1/profile/{catalog.other}"), 401, "No API key found in request")
    response = client.get(f"/embed/v1/profile/{uid(99, 1)}", headers=key_header(secret))
    assert response.status_code == 404 and response.get_json()["message"] == "Not found"


def test_the_start_plan_allows_5_a_second_then_429_with_retry_after(client, catalog):
    key, value = make_key(plan="start")
    statuses = [client.get("/v1/roles", headers=key_header(value)) for _ in range(6)]
    assert [r.status_code for r in statuses[:5]] == [200] * 5
    assert statuses[0].headers["RateLimit-Limit"] == "300" and statuses[0].headers["RateLimit-Remaining"] == "299"
    refused = statuses[5]
    assert_gateway_error(refused, 429, "API rate limit exceeded: 5 per second for this key")
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["RateLimit-Remaining"] == "0" and refused.headers["X-RateLimit-Remaining-Minute"] == "0"
    assert_headers(refused)
    db.session.expire_all()
    assert meter(key) == 5  # a refused request is not metered
    # Another key has its own budget.
    _, other = make_key(plan="start")
    assert client.get("/v1/roles", headers=key_header(other)).status_code == 200


def test_pay_as_you_go_is_300_a_minute(client, catalog, monkeypatch):
    from app.services.apikeys import PLAN_LIMITS

    assert PLAN_LIMITS["payg"].window.amount == 300 and PLAN_LIMITS["payg"].window.get_expiry() == 60
    assert [PLAN_LIMITS[p].window.amount for p in ("start", "build", "scale")] == [5, 25, 100]
    assert {PLAN_LIMITS[p].window.get_expiry() for p in ("start", "build", "scale")} == {1}
    key, value = make_key(plan="payg")
    for _ in range(300):
        limiter.limiter.hit(PLAN_LIMITS["payg"].window, "api-key", key.id)
    refused = client.get("/v1/roles", headers=key_header(value))
    assert_gateway_error(refused, 429, "API rate limit exceeded: 300 per minute for this key")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60 and refused.headers["RateLimit-Remaining"] == "0"


def test_a_bearer_token_never_reads_another_members_data_through_any_catalog_path(client, catalog):
    """The sign-in's reach: its own profile only. Every catalog path, with a valid token of a
    member whose profile is `mine`: anything about `other` or the wider catalog is refused."""
    _, _, token = member_with_token("pro", catalog.mine)
    for method, path, kw in catalog_paths(catalog):
        response = getattr(client, method)(path, headers=bearer(token), **kw)
        assert response.status_code == 403, (path, response.get_data(as_text=True))
        body = response.get_json()
        assert body["result"] == "error" and "data" not in body
        if path.startswith(f"/v1/profile/{catalog.other}") and not path.endswith("/collaborators"):
            assert body["message"] == "This token reaches only its own member's profile"
        else:
            assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    # ... and the catalog-wide paths stay refused even when aimed at the member's own profile.
    for path in (f"/v1/profile/{catalog.mine}/collaborators", "/v1/roles"):
        response = client.get(path, headers=bearer(token))
        assert response.status_code == 403 and 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    # Its own profile keeps working; and nothing of this was metered.
    assert client.get(f"/v1/profile/{catalog.mine}", headers=bearer(token)).status_code == 200
    assert db.session.scalar(db.select(db.func.count()).select_from(ApiUsage)) == 0


def test_an_invalid_bearer_token_on_a_catalog_path_is_401(client, catalog):
    response = client.get("/v1/roles", headers=bearer("made-up"))
    assert response.status_code == 401 and 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_the_sign_in_never_moves_the_meter(client, catalog):
    _key, _ = make_key()
    _, _, token = member_with_token("pro", catalog.mine)
    for path in ("/v1/me", "/v1/me/credits", "/v1/me/analytics", f"/v1/profile/{catalog.mine}/credits"):
        assert client.get(path, headers=bearer(token)).status_code == 200
    assert db.session.scalar(db.select(db.func.count()).select_from(ApiUsage)) == 0


def test_made_up_keys_draw_on_the_address_budget_and_are_refused_in_the_gateway_shape(
    app, client, catalog, monkeypatch
):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 2)
    for _ in range(2):
        assert client.get("/v1/roles", headers=key_header("bogus")).status_code == 401
    refused = client.get("/v1/roles", headers=key_header("bogus"))
    assert refused.status_code == 429 and set(refused.get_json()) == {"message", "request_id"}
    assert refused.headers["Retry-After"]


@pytest.mark.parametrize("plan, per_second, per_minute", [("build", 25, 1500), ("scale", 100, 6000)])
def test_build_and_scale_plans_refuse_past_their_per_second_budget(client, catalog, plan, per_second, per_minute):
    import time

    from app.services.apikeys import PLAN_LIMITS

    key, value = make_key(plan=plan)
    for _attempt in range(3):
        limiter.reset()
        while time.time() % 1 > 0.5:  # the budget spent and the request made within one second
            time.sleep(0.01)
        for _ in range(per_second - 1):
            limiter.limiter.hit(PLAN_LIMITS[plan].window, "api-key", key.id)
        last = client.get("/v1/roles", headers=key_header(value))
        refused = client.get("/v1/roles", headers=key_header(value))
        if last.status_code == 200 and refused.status_code == 429:
            break
    assert last.status_code == 200 and last.headers["RateLimit-Limit"] == str(per_minute)
    assert_gateway_error(refused, 429, f"API rate limit exceeded: {per_second} per second for this key")
    assert refused.headers["Retry-After"] == "1" and refused.headers["RateLimit-Remaining"] == "0"
