"""Discovery and the key set are answered at the WSGI front (app/protocol/front.py, published.py) before
Flask: the same bytes and headers as the Flask routes, conditional GET, HEAD, and the same access
line and metrics; anything unusual, and a key set due for a refresh, still goes to Flask."""

from __future__ import annotations

import logging

import pytest

from app.core.capabilities import DISCOVERY_PATH, JWKS_PATH
from app.core.metrics import REQUESTS
from app.protocol import published
from app.protocol.front import Front
from app.protocol.jwks import keystore

PATHS = {DISCOVERY_PATH: "oauth.discovery", JWKS_PATH: "oauth.jwks"}


def headers_without_request_id(response) -> dict:
    return {k: v for k, v in response.headers.items() if k != "X-Request-Id"}


@pytest.fixture(autouse=True)
def cached_keys(app, monkeypatch):
    """As in production: the key set is re-read every few seconds, not on every request (the
    test settings re-read it always, so other tests see rotations at once)."""
    monkeypatch.setattr(app.extensions["keystore"], "refresh_interval", 60)
    keystore.snapshot()


@pytest.mark.parametrize("path", PATHS)
def test_front_answers_as_the_flask_route_does(app, client, path):
    front = client.get(path)
    # A query string is handed to Flask, whose route ignores it: the Flask route's own answer.
    flask_route = client.get(path + "?via=flask")
    assert front.status_code == flask_route.status_code == 200
    assert front.data == flask_route.data
    assert headers_without_request_id(front) == headers_without_request_id(flask_route)
    assert front.headers["Cache-Control"] == f"public, max-age={app.config['JWKS_MAX_AGE']}"
    assert front.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("path", PATHS)
def test_conditional_get_and_head(client, path):
    etag = client.get(path).headers["ETag"]
    again = client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == etag
    assert client.get(path, headers={"If-None-Match": '"stale"'}).status_code == 200
    # RFC 9110 13.1.2: a list of tags, weak comparison, and `*`; never a match by substring.
    for header in (f'"stale", {etag}', f"W/{etag}", "*"):
        assert client.get(path, headers={"If-None-Match": header}).status_code == 304, header
    assert client.get(path, headers={"If-None-Match": etag[:-1] + 'x"'}).status_code == 200
    assert client.get(path, headers={"If-None-Match": '"x' + etag[1:]}).status_code == 200
    head = client.head(path)
    assert head.status_code == 200 and head.data == b""
    assert int(head.headers["Content-Length"]) == len(client.get(path).data)


def test_front_answers_without_flask(app):
    """Flask behind the front is never called for a plain GET (a stub that fails stands in)."""

    def flask_must_not_run(environ, start_response):
        raise AssertionError(f"handed to Flask: {environ['PATH_INFO']}")

    front = Front(app, flask_must_not_run, published.answerers(app))
    for path in PATHS:
        statuses = []
        body = b"".join(
            front(
                {"REQUEST_METHOD": "GET", "PATH_INFO": path, "REMOTE_ADDR": "127.0.0.1"},
                lambda status, headers: statuses.append(status),
            )
        )
        assert statuses == ["200 OK"] and body.startswith(b"{")


def test_unusual_requests_and_stale_keys_go_to_flask(app):
    seen = []

    def flask(environ, start_response):
        seen.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("QUERY_STRING", "")))
        start_response("200 OK", [])
        return [b"flask"]

    front = Front(app, flask, published.answerers(app))
    base = {"PATH_INFO": DISCOVERY_PATH, "REMOTE_ADDR": "127.0.0.1"}
    cases = [
        {**base, "REQUEST_METHOD": "POST"},
        {**base, "REQUEST_METHOD": "GET", "QUERY_STRING": "a=b"},
        {**base, "REQUEST_METHOD": "GET", "HTTP_AUTHORIZATION": "Basic eDp5"},
        {**base, "REQUEST_METHOD": "GET", "PATH_INFO": "/api/auth/jwks/"},
    ]
    for environ in cases:
        assert front(environ, lambda *a: None) == [b"flask"]
    keystore.invalidate()  # the snapshot is due for a reload, which needs the database: Flask
    assert front({**base, "REQUEST_METHOD": "GET", "PATH_INFO": "/api/auth/jwks"}, lambda *a: None) == [b"flask"]
    assert len(seen) == len(cases) + 1


@pytest.mark.parametrize("path", PATHS)
def test_front_writes_the_access_line_and_counts_the_request(client, caplog, path):
    endpoint = PATHS[path]
    before = REQUESTS.labels(endpoint, "GET", "200")._value.get()
    with caplog.at_level(logging.INFO, logger="credits_id.access"):
        response = client.get(path, headers={"X-Request-Id": "lb-7f3a.42"})
    assert response.headers["X-Request-Id"] == "lb-7f3a.42"
    line = next(r for r in caplog.records if r.name == "credits_id.access")
    assert (line.method, line.path, line.endpoint, line.status, line.request_id) == (
        "GET",
        path,
        endpoint,
        200,
        "lb-7f3a.42",
    )
    assert line.client_id is None and line.member is None and line.remote_addr == "127.0.0.1"
    assert line.latency_ms >= 0
    assert REQUESTS.labels(endpoint, "GET", "200")._value.get() == before + 1
    # A caller's id that does not look like one is replaced, as on every other route.
    assert client.get(path, headers={"X-Request-Id": "two words"}).headers["X-Request-Id"] != "two words"
