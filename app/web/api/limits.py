"""The `/v1` request budget, the request id and the version headers - on every API response.

The budget is per sign-in per minute (`API_RATE_LIMIT_PER_MINUTE`): per grant, the member's
sign-in to an app, shared by its access token and every token refreshed from it. It is counted by
Flask-Limiter's storage and fixed-window strategy: Redis when `REDIS_URL` is set, so every
server process draws on the same count. Requests without a live bearer token (none, made up,
expired or revoked) are counted per client address. The count is taken for every `/v1` request before routing (an unknown path costs a
request too), and the headers are rendered from the same window. Sign-in traffic (authorize,
token, userinfo, key set, discovery) never passes here: it is not metered.

Flask-Limiter's own headers name the reset as a timestamp (`X-RateLimit-Reset`); the platform
spec wants `RateLimit-Reset` in seconds until the window refills, so the headers are set here."""

from __future__ import annotations

from flask import Response, current_app, g, request
from limits import RateLimitItemPerMinute

from app.core import logs
from app.services.throttle import spend
from app.web.api.auth import live_token
from app.web.api.envelope import ApiError, Window
from app.web.api.gateway import API_KEY_HEADER, GatewayError, presented_key
from app.web.api.versioning import SERVICE_VERSION as SERVICE_VERSION
from app.web.api.versioning import add_version_headers

LIMIT_SCOPE = "api-v1"
GATEWAY_REQUEST_ID = "X-Gateway-Request-Id"  # the spec's name; X-Request-Id is set on every response


def grant_budget(grant_id: str) -> tuple[str, str]:
    """The budget of one sign-in (a grant: its access token and those refreshed from it)."""
    return f"grant:{grant_id}", "each sign-in of a member to an app (its refreshed tokens included)"


def caller_key() -> tuple[str, str]:
    """Whose budget a request draws on, and how the 429 names it. A live token draws on its
    grant's: the member's sign-in to the app, which every refreshed token continues (by token, a
    refresh would start a fresh budget). Anything else on the sender's address: counted by token
    value, a made-up token per request would never run out."""
    token = live_token()
    if token is not None:
        return grant_budget(token.grant_id)
    return f"addr:{request.remote_addr or 'unknown'}", "each address without a valid access token"


def _keyed_route() -> bool:
    """Does the request reach a route that takes API keys (an unknown path or method does not:
    it is counted on the address's budget, so its answer carries a window too)?"""
    rule = request.url_rule
    view = current_app.view_functions.get(rule.endpoint) if rule is not None else None
    return view is not None and hasattr(view, "key_surface")


def count_request() -> None:
    """Spend one request of the caller's budget; past the budget, 429 with `Retry-After`.
    A request with a live API key is budgeted per key by the gateway instead (app/web/api/gateway.py);
    one with a made-up key draws on its address's budget here, and is refused in the gateway's shape."""
    has_key = API_KEY_HEADER in request.headers
    if has_key and presented_key() is not None and _keyed_route():
        return  # the gateway counts it on the key's budget
    count_on(*caller_key())


def count_on(key: str, per: str) -> None:
    """Spend one request of the budget `key` (`per`: whose it is, in the 429's words); past it,
    429 with `Retry-After`. The tool server spends a sign-in's grant budget here, per tool call."""
    has_key = API_KEY_HEADER in request.headers
    item = RateLimitItemPerMinute(int(current_app.config["API_RATE_LIMIT_PER_MINUTE"]))
    spent = spend(item, LIMIT_SCOPE, key)
    if spent is None:  # the counter store is down: served uncounted
        return
    window = Window(item.amount, spent.remaining, spent.reset)
    g.api_window = window
    if not spent.allowed:
        if has_key:
            raise GatewayError(
                429, f"API rate limit exceeded: {item.amount} per minute for {per}", {"Retry-After": str(window.reset)}
            )
        raise ApiError(
            429,
            f"Too many requests: the budget is {item.amount} per minute for {per}",
            {"Retry-After": str(window.reset)},
        )


def decorate_response(response: Response) -> Response:
    """Headers every `/v1` and `/embed/v1` response carries, success or failure."""
    window: Window | None = g.get("api_window")
    if window is not None:
        response.headers.update(window.headers())
    # The request's id (app/core/logs.py: the caller's when sane, else fresh; its access line carries
    # it too) under the platform's header name as well as ours.
    response.headers[GATEWAY_REQUEST_ID] = g.get("request_id") or logs.request_id_for(None)
    add_version_headers(response)  # x-service-version; Deprecation and Sunset on a deprecated route
    # Data is served live and must not be stored by the consumer (spec, data-use terms 2). Only a
    # response that says its own caching keeps it: the widget's script (app/web/api/widget_script.py).
    if "Cache-Control" not in response.headers:
        response.headers["Cache-Control"] = "no-store"
    return response
