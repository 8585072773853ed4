"""The published documents - discovery and the key set - answered before Flask.

Every relying party and resource server fetches these two documents, and nothing about them
depends on who asks: they are the same bytes (prepared once, with an ETag) until the
configuration or the keys change. Flask's request machinery (context, session, routing, the
hooks) costs more CPU than writing those bytes, so this WSGI front answers a plain `GET`/`HEAD`
of either path itself, with the headers the Flask route gives, and still writes the request's
access line and metrics through the same functions (app/logs.py, app/metrics.py).

Anything unusual is handed to Flask, whose routes (app/oauth/views.py) answer exactly the same:
a query string, an `Authorization` header, another method, or a key set whose cached snapshot is
due for a refresh from the database (the key store reloads it inside Flask's app context).
No library serves prepared bytes at the WSGI layer with our logging and metrics, hence by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask

from app import logs, metrics
from app.capabilities import DISCOVERY_PATH, JWKS_PATH
from app.oauth.metadata import not_modified, published_headers
from app.security import baseline_headers

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class PublishedDocuments:
    """WSGI middleware in front of the Flask app (see the module docstring)."""

    def __init__(self, app: Flask, wsgi_app: WSGIApp) -> None:
        self.wsgi_app = wsgi_app
        self.discovery = app.extensions["discovery"]
        self.keystore = app.extensions["keystore"]
        self.max_age = int(app.config["JWKS_MAX_AGE"])
        self.baseline = baseline_headers(app.config["ISSUER_URL"].startswith("https://"))

    def _document(self, path: str) -> tuple[str, bytes, str] | None:
        """(endpoint, body, etag) of the document at `path`, when it can be answered here."""
        if path == DISCOVERY_PATH:
            return "oauth.discovery", self.discovery.body, self.discovery.etag
        if path == JWKS_PATH:
            snap = self.keystore.fresh_snapshot()
            return ("oauth.jwks", snap.jwks_body, snap.jwks_etag) if snap is not None else None
        return None

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD")
        if method not in ("GET", "HEAD") or environ.get("QUERY_STRING") or "HTTP_AUTHORIZATION" in environ:
            return self.wsgi_app(environ, start_response)
        document = self._document(environ.get("PATH_INFO", ""))
        if document is None:
            return self.wsgi_app(environ, start_response)
        started = time.perf_counter()
        endpoint, body, etag = document
        request_id = logs.request_id_for(environ.get("HTTP_X_REQUEST_ID"))
        headers = [*published_headers(etag, self.max_age), *self.baseline, (logs.REQUEST_ID_HEADER, request_id)]
        if not_modified(etag, environ.get("HTTP_IF_NONE_MATCH")):
            status, body = 304, b""
            start_response("304 NOT MODIFIED", headers)
        else:
            status = 200
            start_response(
                "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers]
            )
            body = b"" if method == "HEAD" else body
        seconds = time.perf_counter() - started
        metrics.observe_request(endpoint, method, status, seconds)
        logs.write_access_line(
            method=method,
            path=environ["PATH_INFO"],
            endpoint=endpoint,
            status=status,
            latency_ms=round(seconds * 1000, 2),
            client_id=None,
            member=None,
            remote_addr=environ.get("REMOTE_ADDR"),
            request_id=request_id,
        )
        return [body]


def init_published(app: Flask) -> None:
    """Install the front; call before ProxyFix wraps the app, so it sees the real client address."""
    app.wsgi_app = PublishedDocuments(app, app.wsgi_app)  # type: ignore[method-assign]  # Flask's documented way
