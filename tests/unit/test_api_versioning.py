"""The spec's versioning headers: `x-service-version` on every response of both doors (`/v1` and
`/embed/v1`), whoever answers it - a view, the gateway, the envelope's error handlers (400, 404,
405, 429, 500, 503), a preflight, the widget's script; and `@deprecated`, which puts
`Deprecation: true` and `Sunset` on every answer of the route it marks (a test-only blueprint)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from flask import Blueprint
from limits import RateLimitItemPerMinute
from sqlalchemy.exc import OperationalError

from app import create_app
from app.core.extensions import db, limiter
from app.services.apikeys import PLAN_LIMITS, PlanLimits, revoke_key
from app.web.api import reads
from app.web.api.envelope import NOT_FOUND, ApiError, ok
from app.web.api.gateway import API, KeyCaller, door
from app.web.api.versioning import SERVICE_VERSION, deprecated
from tests.api_support import bearer, make_catalog, member_with_token, uid
from tests.conftest import IN_PROCESS
from tests.key_support import key_header, make_key

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py

ORIGIN = {"Origin": "https://widgets.example"}


@pytest.fixture
def catalog():
    return make_catalog(credits=4)


def assert_versioned(label: str, response, status: int) -> None:
    assert response.status_code == status, (label, response.status_code, response.get_data(as_text=True)[:200])
    assert response.headers.get("x-service-version") == SERVICE_VERSION, (label, dict(response.headers))
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", SERVICE_VERSION)
    assert "Deprecation" not in response.headers and "Sunset" not in response.headers, label


def spend_the_budget(monkeypatch, client, path: str, headers: dict) -> None:
    """The `start` plan held to one request a minute (a second's window could end between two
    requests on a loaded machine), and that request made."""
    monkeypatch.setitem(PLAN_LIMITS, "start", PlanLimits(RateLimitItemPerMinute(1), 1))
    assert client.get(path, headers=headers).status_code == 200


def crash(*args, **kwargs):
    raise RuntimeError("internals")


def database_down(*args, **kwargs):
    raise OperationalError("SELECT 1", {}, Exception("connection refused"))


def test_every_kind_of_v1_answer_carries_the_version(app, client, catalog, monkeypatch):
    _, _, token = member_with_token("pro", catalog.mine)
    _, secret = make_key()
    _, publishable = make_key("publishable")
    _, start = make_key(plan="start")
    key = key_header(secret)
    cases = [
        ("token read", client.get("/v1/me", headers=bearer(token)), 200),
        ("key read", client.get("/v1/roles", headers=key), 200),
        ("HEAD", client.head("/v1/roles", headers=key), 200),
        ("preflight", client.options("/v1/roles", headers={**ORIGIN, "Access-Control-Request-Method": "GET"}), 200),
        ("too big page", client.get(f"/v1/profile/{catalog.mine}/credits?limit=51", headers=key), 400),
        ("NUL byte", client.get("/v1/roles?x=%00", headers=key), 400),
        ("no token", client.get("/v1/me"), 401),
        ("gateway: no key", client.get("/v1/roles"), 401),
        ("gateway: unknown key", client.get("/v1/roles", headers=key_header("msk_" + "x" * 43)), 401),
        ("gateway: publishable key", client.get("/v1/roles", headers=key_header(publishable, **ORIGIN)), 403),
        ("token on the catalog", client.get("/v1/roles", headers=bearer(token)), 403),
        ("unknown path", client.get("/v1/nope", headers=key), 404),
        ("unknown profile", client.get(f"/v1/profile/{uid(99, 1)}", headers=key), 404),
        ("wrong method", client.delete("/v1/roles", headers=key), 405),
        ("too large", client.post("/v1/search", headers=key, data=b"x" * (1024 * 1024 + 1)), 413),
    ]
    spend_the_budget(monkeypatch, client, "/v1/roles", key_header(start))
    cases.append(("gateway: 429", client.get("/v1/roles", headers=key_header(start)), 429))
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    limiter.reset()
    client.get("/v1/me", headers=bearer(token))
    cases.append(("token budget: 429", client.get("/v1/me", headers=bearer(token)), 429))
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 300)
    monkeypatch.setattr(reads, "chart_rows", crash)
    cases.append(("crash", client.get(f"/v1/profile/{catalog.mine}/charts", headers=key), 500))
    monkeypatch.setattr(reads, "credit_page", database_down)
    cases.append(("database down", client.get(f"/v1/profile/{catalog.mine}/credits", headers=key), 503))
    for label, response, status in cases:
        assert_versioned(label, response, status)


def test_every_kind_of_widget_answer_carries_the_version(client, catalog, monkeypatch):
    _, publishable = make_key("publishable")
    _, start = make_key("publishable", plan="start")
    revoked_key, revoked = make_key("publishable")
    revoke_key(revoked_key)
    db.session.commit()
    widget = key_header(publishable, **ORIGIN)
    script = client.get("/embed/v1/widget.js")
    cases = [
        ("profile", client.get(f"/embed/v1/profile/{catalog.mine}", headers=widget), 200),
        ("cards", client.get(f"/embed/v1/cards?ids={catalog.mine}", headers=widget), 200),
        ("script", script, 200),
        (
            "script, revalidated",
            client.get("/embed/v1/widget.js", headers={"If-None-Match": script.headers["ETag"]}),
            304,
        ),
        ("script, old build", client.get("/embed/v1/widget.0123456789abcdef.js"), 404),
        (
            "preflight",
            client.options("/embed/v1/cards", headers={**ORIGIN, "Access-Control-Request-Method": "GET"}),
            200,
        ),
        ("cards without ids", client.get("/embed/v1/cards", headers=widget), 400),
        ("too big page", client.get(f"/embed/v1/profile/{catalog.mine}/credits?limit=51", headers=widget), 400),
        ("gateway: no key", client.get(f"/embed/v1/profile/{catalog.mine}", headers=ORIGIN), 401),
        (
            "gateway: revoked key",
            client.get(f"/embed/v1/cards?ids={catalog.mine}", headers=key_header(revoked, **ORIGIN)),
            401,
        ),
        (
            "gateway: another domain",
            client.get(
                f"/embed/v1/cards?ids={catalog.mine}", headers=key_header(publishable, Origin="https://evil.example")
            ),
            403,
        ),
        ("unknown path", client.get("/embed/v1/nope", headers=widget), 404),
        ("unknown profile", client.get(f"/embed/v1/profile/{uid(99, 1)}", headers=widget), 404),
        ("wrong method", client.post("/embed/v1/cards", headers=widget), 405),
    ]
    spend_the_budget(monkeypatch, client, f"/embed/v1/cards?ids={catalog.mine}", key_header(start, **ORIGIN))
    cases.append(
        ("gateway: 429", client.get(f"/embed/v1/cards?ids={catalog.mine}", headers=key_header(start, **ORIGIN)), 429)
    )
    monkeypatch.setattr(reads, "chart_rows", crash)
    cases.append(("crash", client.get(f"/embed/v1/profile/{catalog.mine}/charts", headers=widget), 500))
    from app.web.api import cards

    monkeypatch.setattr(cards, "cards", database_down)
    cases.append(("database down", client.get(f"/embed/v1/cards?ids={catalog.mine}", headers=widget), 503))
    for label, response, status in cases:
        assert_versioned(label, response, status)


def test_nothing_under_the_api_prefixes_is_answered_before_flask(app):
    """The WSGI front answers sign-in paths only: every API response passes the hook that sets the
    version header (a path added there would have to set it too)."""
    front = app.wsgi_app
    while not hasattr(front, "answerers"):
        front = front.wsgi_app
    assert front.answerers
    assert not [path for path in front.answerers if path.startswith(("/v1", "/embed"))]


# -- @deprecated ------------------------------------------------------------------------------------

SUNSET = date(2027, 6, 30)


def _app_with_a_deprecated_route(settings):
    """A fresh app with a test-only blueprint: one deprecated route beside one that is not."""
    legacy = Blueprint("legacy_test", __name__, url_prefix="/v1/legacy-test")

    @legacy.get("/profile/<profile_id>")
    @deprecated(sunset=SUNSET)
    @door(key=API)
    def old_profile(caller: KeyCaller, profile_id: str):
        found = reads.find_profile(profile_id)
        if found is None:
            raise ApiError(404, NOT_FOUND)
        return ok(reads.profile_json(found))

    @legacy.get("/roles")
    @door(key=API)
    def current_roles(caller: KeyCaller):
        return ok([])

    fresh = create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, **IN_PROCESS})
    fresh.register_blueprint(legacy)
    return fresh


def test_a_deprecated_route_says_so_and_when_it_goes_on_every_answer(settings, catalog):
    client = _app_with_a_deprecated_route(settings).test_client()
    _, secret = make_key()
    _, publishable = make_key("publishable")
    path = f"/v1/legacy-test/profile/{catalog.mine}"
    answers = {
        "ok": (client.get(path, headers=key_header(secret)), 200),
        "not found": (client.get(f"/v1/legacy-test/profile/{uid(99, 1)}", headers=key_header(secret)), 404),
        "no key": (client.get(path), 401),
        "not entitled": (client.get(path, headers=key_header(publishable, **ORIGIN)), 403),
        "preflight": (client.options(path, headers={**ORIGIN, "Access-Control-Request-Method": "GET"}), 200),
    }
    for label, (response, status) in answers.items():
        assert response.status_code == status, label
        assert response.headers["Deprecation"] == "true", label
        assert response.headers["Sunset"] == "Wed, 30 Jun 2027 00:00:00 GMT", label
        assert response.headers["x-service-version"] == SERVICE_VERSION, label
    assert answers["ok"][0].get_json()["data"]["name"] == "Ada Mine"  # it still works until the sunset
    # A browser app may read them (CORS exposes both).
    exposed = client.get(path, headers=key_header(secret, **ORIGIN)).headers["Access-Control-Expose-Headers"]
    assert "Deprecation" in exposed and "Sunset" in exposed
    # Its neighbour is not deprecated, and neither is a path no route serves.
    for response in (
        client.get("/v1/legacy-test/roles", headers=key_header(secret)),
        client.get("/v1/legacy-test/nope", headers=key_header(secret)),
        client.get(f"/v1/profile/{catalog.mine}", headers=key_header(secret)),
    ):
        assert "Deprecation" not in response.headers and "Sunset" not in response.headers
        assert response.headers["x-service-version"] == SERVICE_VERSION


def test_the_sunset_is_an_http_date_in_utc():
    def view():
        return None

    moment = datetime(2027, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert deprecated(sunset=moment)(view).deprecation.headers() == {
        "Deprecation": "true",
        "Sunset": "Sat, 02 Jan 2027 01:04:05 GMT",
    }
    assert deprecated(sunset=date(2027, 1, 2))(view).deprecation.sunset == datetime(2027, 1, 2, tzinfo=UTC)
    with pytest.raises(ValueError, match="time zone"):
        deprecated(sunset=datetime(2027, 1, 2))  # naive: which midnight?
