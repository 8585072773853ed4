"""The `/v1` request budget, the request id and the version header - on every `/v1` response.

The budget is per access token per minute (`API_RATE_LIMIT_PER_MINUTE`), counted by
Flask-Limiter's storage and fixed-window strategy: Redis when `REDIS_URL` is set, so every
server process draws on the same count. Requests without a bearer token are counted per client
address. The count is taken for every `/v1` request before routing (an unknown path costs a
request too), and the headers are rendered from the same window. Sign-in traffic (authorize,
token, userinfo, key set, discovery) never passes here: it is not metered.

Flask-Limiter's own headers name the reset as a timestamp (`X-RateLimit-Reset`); the platform
spec wants `RateLimit-Reset` in seconds until the window refills, so the headers are set here."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Response, current_app, g, request
from limits import RateLimitItemPerMinute

from app import logs
from app.api.auth import bearer_value
from app.api.envelope import ApiError
from app.auth.throttle import spend
from app.models.base import sha256_hex

# The date of the /v1 contract this service implements (spec: `x-service-version`, a date).
SERVICE_VERSION = "2026-11-23"
LIMIT_SCOPE = "api-v1"
GATEWAY_REQUEST_ID = "X-Gateway-Request-Id"  # the spec's name; X-Request-Id is set on every response


@dataclass(frozen=True)
class Window:
    limit: int
    remaining: int
    reset: int  # seconds until the window refills

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
            "X-RateLimit-Limit-Minute": str(self.limit),
            "X-RateLimit-Remaining-Minute": str(self.remaining),
        }


def caller_key() -> str:
    """Whose budget a request draws on: the access token (by hash: no token in the store), or
    the client address when no token was sent."""
    token = bearer_value()
    return f"token:{sha256_hex(token)}" if token else f"addr:{request.remote_addr or 'unknown'}"


def count_request() -> None:
    """Spend one request of the caller's budget; past the budget, 429 with `Retry-After`."""
    key = caller_key()
    _spend(key, "each access token" if key.startswith("token:") else "each address without an access token")


def count_refused_token() -> None:
    """A bearer token that authenticates nothing also spends its sender's address budget:
    counted by token alone, a made-up token per request would never run out."""
    _spend(f"addr:{request.remote_addr or 'unknown'}", "each address sending refused tokens")


def _spend(key: str, per: str) -> None:
    item = RateLimitItemPerMinute(int(current_app.config["API_RATE_LIMIT_PER_MINUTE"]))
    spent = spend(item, LIMIT_SCOPE, key)
    if spent is None:  # the counter store is down: served uncounted
        return
    window = Window(item.amount, spent.remaining, spent.reset)
    g.api_window = window
    if not spent.allowed:
        raise ApiError(429, f"Too many requests: the budget is {item.amount} per minute for {per}",
                       {"Retry-After": str(window.reset)})


def decorate_response(response: Response) -> Response:
    """Headers every `/v1` response carries, success or failure."""
    window: Window | None = g.get("api_window")
    if window is not None:
        response.headers.update(window.headers())
    # The request's id (app/logs.py: the caller's when sane, else fresh; its access line carries
    # it too) under the platform's header name as well as ours.
    response.headers[GATEWAY_REQUEST_ID] = g.get("request_id") or logs.request_id_for(None)
    response.headers["x-service-version"] = SERVICE_VERSION
    # Data is served live and must not be stored by the consumer (spec, data-use terms 2).
    response.headers["Cache-Control"] = "no-store"
    return response
