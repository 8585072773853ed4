"""How each kind of route answers when the database cannot be reached (any backend): an app
whose DATABASE_URL points at a port where nothing listens. The real outage-and-recovery of a
running server over PostgreSQL is in test_outage.py."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app import create_app
from app.core.extensions import db
from tests.conftest import free_port
from tests.flows import AUTHORIZE, TOKEN, USERINFO


@pytest.fixture
def unreachable(app, settings):
    """A second app over a database that refuses connections (the test app is restored after)."""
    broken = create_app(
        {
            **{k: v for k, v in settings.items() if not k.startswith("_")},
            "DATABASE_URL": f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/gone",
            "DATABASE_CONNECT_TIMEOUT": 2,
        }
    )
    broken.config["WTF_CSRF_ENABLED"] = False

    @broken.get("/v1/probe")
    def probe():  # stands for any /v1 data route: it reads the database
        return {"rows": db.session.execute(text("SELECT 1")).scalar()}

    with broken.app_context():
        yield broken.test_client()


def test_token_endpoint_answers_temporarily_unavailable(unreachable):
    response = unreachable.post(
        TOKEN,
        data={"grant_type": "authorization_code", "code": "x", "client_id": "a"},
        headers={"X-Request-Id": "outage-token-1"},
    )
    assert response.status_code == 503
    assert response.get_json() == {
        "error": "temporarily_unavailable",
        "error_description": "The service is temporarily unavailable. Retry shortly.",
    }
    assert response.headers["Retry-After"] == "5"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Request-Id"] == "outage-token-1"


@pytest.mark.parametrize("path", [TOKEN, "/api/auth/oauth2/revoke"])
def test_a_browser_apps_request_also_gets_the_503(unreachable, path):
    """With an Origin header the CORS hook looks the app up too; the outage must not turn the
    answer into a 500 there."""
    response = unreachable.post(
        path,
        data={"grant_type": "authorization_code", "code": "x", "client_id": "a", "token": "t"},
        headers={"Origin": "https://spa.example"},
    )
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    assert "Access-Control-Allow-Origin" not in response.headers


def test_userinfo_answers_temporarily_unavailable(unreachable):
    response = unreachable.get(USERINFO, headers={"Authorization": "Bearer some-access-token"})
    assert response.status_code == 503
    assert response.get_json()["error"] == "temporarily_unavailable"


@pytest.mark.parametrize(
    "method,path,data",
    [
        ("GET", AUTHORIZE + "?client_id=app&response_type=code&redirect_uri=http://127.0.0.1:7199/cb", None),
        ("POST", "/login", {"email": "ana@example.com", "password": "whatever"}),
    ],
)
def test_sign_in_pages_answer_a_503_page(unreachable, method, path, data):
    response = unreachable.open(path, method=method, data=data, headers={"X-Request-Id": "outage-page-1"})
    assert response.status_code == 503
    assert response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert "Temporarily unavailable" in page and "temporarily unavailable" in page
    assert "reference outage-page-1" in page  # what a member can quote to support
    assert "psycopg" not in page and "OperationalError" not in page
    assert response.headers["Retry-After"] == "5"


def test_data_api_answers_the_platform_envelope(unreachable):
    """A /v1 data route that reaches the database answers the spec's error envelope."""
    response = unreachable.get("/v1/probe")
    assert response.status_code == 503
    assert response.get_json() == {"result": "error", "code": 503, "message": "Service temporarily unavailable"}


def test_probes_during_the_outage(unreachable):
    assert unreachable.get("/healthz").status_code == 200
    response = unreachable.get("/readyz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == {"ok": False, "error": "unavailable"}
    assert body["checks"]["migrations"]["ok"] is False
