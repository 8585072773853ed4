"""Prometheus metrics at /metrics, correct under several server workers.

Under granian each worker is its own process with its own counters, so serve.py sets
PROMETHEUS_MULTIPROC_DIR before the workers start: prometheus-client then keeps every worker's
values in files there and /metrics adds them up, whichever worker answers (its "multiprocess
mode"). Without the variable (`flask run`, tests) the process's own registry is served.

The protocol code reports what happened through the small functions below (one line at each
place); they also note the app and member on the request's access log line. Labels are few and
bounded (endpoint names, not paths) so the series count stays small.
"""

from __future__ import annotations

import hmac
import os
import time

from flask import Blueprint, Flask, Response, abort, current_app, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

from app.core import logs

NAMESPACE = "credits_id"

REQUESTS = Counter(
    "http_requests",
    "HTTP requests answered, by endpoint, method and status.",
    ["endpoint", "method", "status"],
    namespace=NAMESPACE,
)
LATENCY = Histogram(
    "http_request_duration_seconds",
    "Time to answer an HTTP request, by endpoint.",
    ["endpoint"],
    namespace=NAMESPACE,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
LOGINS = Counter("logins", "Password sign-ins, by result (ok, failed).", ["result"], namespace=NAMESPACE)
CONSENTS = Counter(
    "consents", "Answers on the consent page, by decision (granted, denied).", ["decision"], namespace=NAMESPACE
)
TOKENS = Counter(
    "tokens", "Tokens issued (code redeemed), refreshed (rotation) and revoked.", ["event"], namespace=NAMESPACE
)
REUSE = Counter(
    "reuse_detected",
    "A used authorization code or rotated refresh token presented again.",
    ["kind"],
    namespace=NAMESPACE,
)

bp = Blueprint("metrics", __name__)


# -- what the protocol code reports ------------------------------------------------------------


def login_succeeded(user_id: str) -> None:
    LOGINS.labels("ok").inc()
    logs.note(user_id=user_id)
    logs.event("login succeeded", member=logs.member_hash(user_id))


def login_failed() -> None:
    LOGINS.labels("failed").inc()
    logs.event("login failed")


def consent_answered(allow: bool, user_id: str, client_id: str) -> None:
    CONSENTS.labels("granted" if allow else "denied").inc()
    logs.note(client_id=client_id, user_id=user_id)
    logs.event("consent " + ("granted" if allow else "denied"), client_id=client_id, member=logs.member_hash(user_id))


def tokens_issued(grant_type: str, client_id: str, user_id: str) -> None:
    """A token response was committed: `authorization_code` is an issue, `refresh_token` a rotation.
    Takes plain ids, read before the commit (after it, reading the rows would query them again)."""
    TOKENS.labels("refreshed" if grant_type == "refresh_token" else "issued").inc()
    logs.note(client_id=client_id, user_id=user_id)


def tokens_revoked(count: int) -> None:
    if count:
        TOKENS.labels("revoked").inc(count)


def reuse_detected(kind: str, grant_id: str, user_id: str) -> None:
    """`kind` is `code` or `refresh_token`; the grant family is being revoked."""
    REUSE.labels(kind).inc()
    logs.event("reuse detected, grant revoked", kind=kind, grant_id=grant_id, member=logs.member_hash(user_id))


# -- requests ----------------------------------------------------------------------------------


# Label values stay few: any other method a client invents (servers accept any token) is "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_request(endpoint: str, method: str, status: int, seconds: float | None) -> None:
    """Count one answered request (from Flask's hook, or the published-documents front)."""
    REQUESTS.labels(endpoint, method if method in METHODS else "other", str(status)).inc()
    if seconds is not None:
        LATENCY.labels(endpoint).observe(seconds)


def _observe(response: Response) -> Response:
    started = g.get("request_started")
    observe_request(
        request.url_rule.endpoint if request.url_rule else "unmatched",
        request.method,
        response.status_code,
        time.perf_counter() - started if started is not None else None,
    )
    return response


def registry() -> CollectorRegistry:
    """All workers' values in multiprocess mode, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        return merged
    return REGISTRY


@bp.get("/metrics")
def metrics() -> Response:
    """Only for the scraper holding METRICS_TOKEN: traffic volumes, client ids and error rates are
    nobody else's business. Without a token set, the main port does not serve metrics at all (the
    operator scrapes METRICS_BIND instead, serve.py); 404 either way, so nothing is advertised."""
    token = current_app.config["METRICS_TOKEN"]
    given = request.headers.get("Authorization", "")
    if not token or not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        abort(404)
    return Response(generate_latest(registry()), mimetype=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})


def init_metrics(app: Flask) -> None:
    app.after_request(_observe)
    if app.config["METRICS_ENABLED"]:
        app.register_blueprint(bp)
