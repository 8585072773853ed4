"""The front: the provider's most frequent machine requests, answered before Flask.

Most of an identity provider's traffic is four requests that need none of Flask's request
machinery (request context, cookie session, routing, CSRF, the page hooks): the discovery
document, the key set, a relying party's token request from its server, and its userinfo call
with a good bearer token. Flask's
cycle with those hooks costs more CPU than the answers themselves (docs/performance.md), so this
WSGI middleware asks the answerer registered for the request's path, and hands everything else
to Flask: another path, a request the answerer declines (anything unusual, and every error it
does not answer by the same rules as the route), whose Flask route then answers the same request
the same way. The answerers are `app/protocol/published.py` (discovery, keys),
`app/protocol/userinfo.py` and `app/protocol/token_endpoint.py`.

Whatever answers, the response carries the request id and the baseline security headers, and
the request gets its access line and metrics, through the same functions as Flask's hooks
(app/core/logs.py, app/core/metrics.py, app/core/security.py). No library answers WSGI requests with our
logging and metrics before Flask, hence by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from flask import Flask, g

from app.core import logs, metrics
from app.core.security import baseline_headers

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass(frozen=True, slots=True)
class Answer:
    """A response given at the front, with what its access line says about it."""

    endpoint: str  # the Flask endpoint that would have answered (metrics and logs use its name)
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    client_id: str | None = None
    member: str | None = None  # the keyed hash of the member id (logs.member_hash), never the id


# environ -> an Answer, or None to hand the request to Flask
Answerer = Callable[[dict[str, Any]], Answer | None]


@contextmanager
def serving(app: Flask, environ: dict[str, Any]) -> Iterator[None]:
    """The app context an answerer serves a request in: its own (a fresh unit of work and `g`,
    as Flask gives each request), with the request's id on every line logged meanwhile."""
    with app.app_context():
        g.request_id = logs.request_id_of(environ)
        yield


def status_line(status: int) -> str:
    return f"{status} {HTTPStatus(status).phrase.upper()}"  # Werkzeug's spelling


class Front:
    """WSGI middleware in front of the Flask app (see the module docstring)."""

    def __init__(self, app: Flask, wsgi_app: WSGIApp, answerers: dict[str, Answerer]) -> None:
        self.wsgi_app = wsgi_app
        self.answerers = answerers
        self.baseline = baseline_headers(app.config["ISSUER_URL"].startswith("https://"))

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        answerer = self.answerers.get(environ.get("PATH_INFO", ""))
        if answerer is None:
            return self.wsgi_app(environ, start_response)
        started = time.perf_counter()
        answer = answerer(environ)
        if answer is None:
            return self.wsgi_app(environ, start_response)
        request_id = logs.request_id_of(environ)
        start_response(
            status_line(answer.status), [*answer.headers, *self.baseline, (logs.REQUEST_ID_HEADER, request_id)]
        )
        seconds = time.perf_counter() - started
        method = environ["REQUEST_METHOD"]
        metrics.observe_request(answer.endpoint, method, answer.status, seconds)
        logs.write_access_line(
            method=method,
            path=environ["PATH_INFO"],
            endpoint=answer.endpoint,
            status=answer.status,
            latency_ms=round(seconds * 1000, 2),
            client_id=answer.client_id,
            member=answer.member,
            remote_addr=environ.get("REMOTE_ADDR"),
            request_id=request_id,
        )
        return [answer.body]


def init_front(app: Flask, answerers: dict[str, Answerer]) -> None:
    """Install the front with its answerers by path (the factory gathers them from
    app/protocol/published.py, userinfo.py and token_endpoint.py); call before ProxyFix wraps the
    app, so it sees the real client address."""
    app.wsgi_app = Front(app, app.wsgi_app, answerers)  # type: ignore[method-assign]  # Flask's documented way
