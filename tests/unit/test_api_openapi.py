"""The OpenAPI 3.1 document: valid, served at both addresses, in step with the routes, and every
kind of real response (success and each refusal) validates against it (openapi-core)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import time_machine
import yaml
from limits import RateLimitItemPerDay
from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse
from openapi_core.testing import MockRequest
from openapi_core.validation.response.exceptions import InvalidData
from openapi_spec_validator import validate

from app.core.extensions import db
from app.models import ApiKey
from app.web.api import widget_script
from app.web.api.gateway import DAY_SCOPE, day_counter
from app.web.api.openapi import DOCUMENT, openapi_document
from tests.api_support import bearer, make_catalog, member_with_token, uid


@pytest.fixture(scope="module")
def spec():
    return OpenAPI.from_dict(openapi_document())


def test_the_document_is_valid_openapi_3_1():
    doc = yaml.safe_load(DOCUMENT.read_text())
    validate(doc)
    assert doc["openapi"].startswith("3.1") and doc["info"]["version"] == "2.0"


def test_served_as_yaml_at_both_addresses(client):
    first = client.get("/openapi.yaml")
    second = client.get("/api/openapi")
    for response in (first, second):
        assert response.status_code == 200 and response.mimetype == "application/yaml"
        assert yaml.safe_load(response.get_data()) == openapi_document()
        assert response.headers["x-service-version"]
    assert client.get("/openapi.yaml", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304


def test_json_for_a_client_that_asks_for_it(client):
    response = client.get("/api/openapi", headers={"Accept": "application/json"})
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert json.loads(response.get_data()) == openapi_document()


def test_each_format_has_its_own_valid_etag_and_caches_keep_them_apart(client):
    as_yaml = client.get("/api/openapi")
    as_json = client.get("/api/openapi", headers={"Accept": "application/json"})
    yaml_tag, json_tag = as_yaml.headers["ETag"], as_json.headers["ETag"]
    for tag in (yaml_tag, json_tag):  # RFC 9110 8.8.3: the quotes around the whole tag
        assert tag.startswith('"') and tag.endswith('"') and tag.count('"') == 2
    assert yaml_tag != json_tag
    assert as_yaml.headers["Vary"] == as_json.headers["Vary"] == "Accept"
    # The JSON tag starts like the YAML one: holding the JSON is no 304 for the YAML.
    assert client.get("/api/openapi", headers={"If-None-Match": json_tag}).status_code == 200
    assert client.get("/api/openapi", headers={"If-None-Match": yaml_tag}).status_code == 304
    assert (
        client.get("/api/openapi", headers={"Accept": "application/json", "If-None-Match": json_tag}).status_code == 304
    )


def _rule(path: str) -> str:
    return (
        path.replace("{id}", "<profile_id>")
        .replace("{rosterId}", "<roster_id>")
        .replace("{idKey}", "<id_key>")
        .replace("{idValue}", "<id_value>")
    )


def test_every_api_route_is_documented_with_the_doors_it_has(app):
    """Every `/v1` and `/embed/v1` route is in the document with its method, and its security
    names exactly the doors the route opens: the sign-in scope it checks and/or API keys."""
    doc = openapi_document()
    documented = {(_rule(path), method.upper()): op for path, ops in doc["paths"].items() for method, op in ops.items()}
    routes = {
        (rule.rule, method): rule
        for rule in app.url_map.iter_rules()
        # The widget's script is a file served beside the API, not an operation (docs/widgets.md).
        if rule.rule.startswith(("/v1", "/embed/v1")) and rule.endpoint.split(".")[0] != widget_script.bp.name
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert set(routes) == set(documented)
    for (path, method), rule in routes.items():
        view = app.view_functions[rule.endpoint]
        expected = ([{"apiKey": []}] if view.key_surface else []) + (
            [{"creditsId": [view.required_scope]}] if view.required_scope else []
        )
        assert documented[(path, method)]["security"] == expected, path


def _validate(spec, response):
    spec.validate_response(WerkzeugOpenAPIRequest(response.request), WerkzeugOpenAPIResponse(response))


def test_real_responses_validate_against_the_document(app, client, spec, monkeypatch):
    catalog = make_catalog(credits=30)
    _user, _, token = member_with_token("pro", catalog.mine)
    _, _, credits_only = member_with_token("basic", catalog.mine, scope="openid credits:read")
    _, _, no_profile = member_with_token("pro", None)
    cases = [
        ("/v1/me", token, 200),
        ("/v1/me/credits", token, 200),
        ("/v1/me/credits?limit=50&offset=10", token, 200),
        ("/v1/me/credits?offset=30", token, 200),
        ("/v1/me/analytics", token, 200),
        (f"/v1/profile/{catalog.mine}", token, 200),
        (f"/v1/profile/{catalog.mine}/credits?limit=1", token, 200),
        (f"/v1/profile/{catalog.mine}/charts", token, 200),
        ("/v1/me/credits?limit=51", token, 400),
        ("/v1/me", None, 401),
        ("/v1/me", "bogus", 401),
        ("/v1/me/analytics", credits_only, 403),
        (f"/v1/profile/{catalog.other}", token, 403),
        (f"/v1/profile/{uid(77, 1)}/charts", token, 403),
        ("/v1/profile/not-a-uuid", token, 404),
        ("/v1/me", no_profile, 404),
    ]
    for path, bearer_token, status in cases:
        response = client.get(path, headers=bearer(bearer_token) if bearer_token else {})
        assert response.status_code == status, (path, response.get_data(as_text=True))
        _validate(spec, response)

    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    assert client.get("/v1/me", headers=bearer(token)).status_code == 200
    response = client.get("/v1/me", headers=bearer(token))
    assert response.status_code == 429
    _validate(spec, response)


def test_the_validator_catches_a_response_that_breaks_the_contract(app, client, spec, monkeypatch):
    """The check above can fail: a row with a field the document does not define is refused."""
    from app.web.api import reads

    catalog = make_catalog(credits=3)
    _, _, token = member_with_token("pro", catalog.mine)
    real = reads.chart_rows
    monkeypatch.setattr(reads, "chart_rows", lambda pid: [{**row, "leaked": "x"} for row in real(pid)])
    response = client.get("/v1/me/analytics", headers=bearer(token))
    assert response.status_code == 200
    with pytest.raises(InvalidData) as caught:
        _validate(spec, response)
    assert "leaked" in str(caught.value.__cause__)
    db.session.rollback()


def test_real_key_door_responses_validate_against_the_document(app, client, spec):
    """Every catalog and widget operation through an API key, and each gateway and API refusal."""
    from app.core.extensions import limiter
    from tests.key_support import index_catalog, key_header, make_key, make_roster, make_workspace_key

    limiter.reset()
    catalog = make_catalog(credits=12)
    index_catalog()
    key, secret = make_key()
    _, publishable = make_key("publishable", domains=["widgets.example"], owner=key.owner)
    roster = make_roster(key.owner, profiles=(catalog.mine, catalog.other))
    _, workspace = make_workspace_key(roster)
    _, start = make_key(plan="start")
    _, _, token = member_with_token("pro", catalog.mine)
    h = key_header(secret)
    origin = "https://widgets.example"
    track, album = uid(1, 2), uid(1, 3)
    cases = [
        ("get", f"/v1/profile/{catalog.other}", h, {}, 200),
        ("get", f"/v1/profile/{catalog.other}/credits?limit=3", h, {}, 200),
        ("get", f"/v1/profile/{catalog.other}/charts", h, {}, 200),
        ("get", f"/v1/profile/{catalog.mine}/collaborators", h, {}, 200),
        ("get", f"/v1/track/id/{track}", h, {}, 200),
        ("get", "/v1/track/isrc/USAAA2000000/albums", h, {}, 200),
        ("get", "/v1/album/spotify/alb0", h, {}, 200),
        ("get", f"/v1/album/id/{album}/credits", h, {}, 200),
        ("post", "/v1/search", h, {"json": {"keyword": "a"}}, 200),
        ("post", "/v1/search", h, {"json": {"keyword": "track", "type": ["track"]}}, 200),
        ("get", "/v1/search/autocomplete?q=a", h, {}, 200),
        ("get", "/v1/roles", h, {}, 200),
        ("get", f"/v1/profiles/search?names=ada&track_ids={uid(2, 2)}", h, {}, 200),
        (
            "get",
            f"/embed/v1/profile/{catalog.other}",
            key_header(publishable, Origin="https://widgets.example"),
            {},
            200,
        ),
        (
            "get",
            f"/embed/v1/profile/{catalog.other}/credits",
            key_header(publishable, Origin="https://widgets.example"),
            {},
            200,
        ),
        ("get", f"/embed/v1/profile/{catalog.other}/charts", h, {}, 200),
        ("get", f"/v1/profile/{catalog.other}/credits?limit=51", h, {}, 400),
        ("post", "/v1/search", h, {"json": {"type": ["track"]}}, 400),
        ("get", "/v1/search/autocomplete", h, {}, 400),
        ("get", "/v1/roles", {}, {}, 401),
        ("get", "/v1/roles", key_header("msk_" + "x" * 43), {}, 401),
        ("get", f"/embed/v1/profile/{catalog.other}", {}, {}, 401),
        ("get", "/v1/roles", key_header(publishable), {}, 403),
        ("get", f"/embed/v1/profile/{catalog.other}", key_header(publishable, Origin="https://evil.example"), {}, 403),
        ("get", "/v1/roles", bearer(token), {}, 403),
        ("get", f"/v1/profile/{catalog.other}/collaborators", bearer(token), {}, 403),
        ("get", "/v1/track/name/x", h, {}, 404),
        ("get", "/v1/album/upc/nope/credits", h, {}, 404),
        ("get", f"/embed/v1/rosters/{roster.id}/cards?limit=1", key_header(publishable, Origin=origin), {}, 200),
        ("get", f"/embed/v1/rosters/{roster.id}/cards?limit=25", h, {}, 400),
        ("get", f"/embed/v1/rosters/{uid(9, 9)}/cards", h, {}, 404),
        ("get", f"/v1/profile/{catalog.mine}/collaborators", key_header(workspace), {}, 200),
        ("get", f"/v1/profile/{catalog.other}/credits", key_header(workspace), {}, 200),
        ("get", "/v1/roles", key_header(workspace), {}, 403),
    ]
    for method, path, headers, kw, status in cases:
        response = getattr(client, method)(path, headers=headers, **kw)
        assert response.status_code == status, (path, response.get_data(as_text=True))
        if method == "post":  # the test client has consumed the request body: describe it again
            request = MockRequest("http://localhost", "post", path, data=json.dumps(kw["json"]).encode())
            spec.validate_response(request, WerkzeugOpenAPIResponse(response))
        else:
            _validate(spec, response)
    for _ in range(5):
        client.get("/v1/roles", headers=key_header(start))
    response = client.get("/v1/roles", headers=key_header(start))
    assert response.status_code == 429
    _validate(spec, response)
    # A workspace key past its day's cap (its counter spent where the gateway counts it).
    workspace_key = db.session.scalar(db.select(ApiKey).where(ApiKey.kind == "workspace"))
    with time_machine.travel(datetime.now(UTC), tick=False):  # no midnight between the two lines
        today = datetime.now(UTC).date()
        limiter.limiter.hit(RateLimitItemPerDay(10_000), DAY_SCOPE, day_counter(workspace_key.id, today), cost=10_000)
        response = client.get(f"/v1/profile/{catalog.mine}", headers=key_header(workspace))
    assert response.status_code == 429 and response.headers["X-RateLimit-Remaining-Day"] == "0"
    _validate(spec, response)
