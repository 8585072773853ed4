"""The key door: what stands in front of the catalog API (`/v1`) and the widget API (`/embed/v1`)
for requests that carry an `x-api-key`.

In order, each refusal in the gateway's own shape `{message, request_id}` (no envelope):
  no key                                   -> 401 `No API key found in request`
  unknown, malformed or revoked key        -> 401 `Unauthorized`
  the key's per-plan budget spent          -> 429 with `Retry-After`, `RateLimit-Remaining: 0`
  key not entitled to the route            -> 403 `You cannot consume this service`
    (a publishable key on `/v1`; a publishable key on the widget API from a page whose
    Origin/Referer is not one of its domains; any key on a sign-in-only route such as `/v1/me`)
Then the view runs with the key, and the request counts once on the `api_requests` meter
(app/services/metering.py, committed here) when the API has answered it: with data, or with a 404 for an
identifier that matched nothing. A request the API refuses as malformed (400) is no call, nor is
one that failed on our side: nobody pays for bad input or for our errors (`answer_and_meter`).

Routes say which doors they have with `door(...)`: a bearer access token (sign-in, own data only)
and/or an API key (catalog). A request with `x-api-key` always takes the key door; a bearer token
on a catalog-wide route is refused with 403 `insufficient_scope` (a sign-in never reaches the
wider catalog)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from urllib.parse import urlsplit

from flask import Response, g, jsonify, request
from limits import RateLimitItemPerMinute

from app.core import logs
from app.core.extensions import db
from app.models import ApiKey
from app.services.apikeys import PLAN_LIMITS, live_key
from app.services.metering import meter_request
from app.services.throttle import spend
from app.web.api.auth import authenticate, bearer_value, challenge
from app.web.api.envelope import ApiError, Window

API_KEY_HEADER = "x-api-key"
NO_KEY = "No API key found in request"
UNAUTHORIZED = "Unauthorized"
CANNOT_CONSUME = "You cannot consume this service"
CATALOG_NEEDS_KEY = "An access token reaches only its own member's data; the catalog needs an API key"
KEY_SCOPE = "api-key"  # the limiter's namespace for per-key budgets

API, WIDGET, TOOLS = "api", "widget", "tools"  # the surfaces a key may use (TOOLS: app/web/toolserver/)


class GatewayError(Exception):
    """A refusal made before the API runs: `{message, request_id}`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def render_gateway_error(error: GatewayError) -> Response:
    response = jsonify({"message": error.message, "request_id": g.get("request_id") or logs.request_id_for(None)})
    response.status_code = error.status
    response.headers.update(error.headers)
    return response


@dataclass(frozen=True)
class KeyCaller:
    """A request through the key door: the whole catalog, metered on `key`."""

    key: ApiKey


_LIVE_KEY = "credits_id.live_api_key"


def key_value() -> str | None:
    return request.headers.get(API_KEY_HEADER)


def presented_key() -> ApiKey | None:
    """The live key the request carries, looked up once per request (the budget and the route ask)."""
    environ = request.environ
    if _LIVE_KEY not in environ:
        environ[_LIVE_KEY] = live_key(key_value())
    return environ[_LIVE_KEY]


def _page_host() -> str | None:
    """The host of the page that made the browser request (Origin, else Referer)."""
    source = request.headers.get("Origin") or request.headers.get("Referer")
    if not source or source == "null":
        return None
    try:
        parts = urlsplit(source)
        return parts.netloc.lower() if parts.scheme in ("http", "https") and parts.netloc else None
    except ValueError:
        return None


def entitled(key: ApiKey, surface: str) -> bool:
    if not key.is_publishable:
        return True  # a secret key reaches the paid API and the widget API from anywhere
    return surface == WIDGET and _page_host() in (key.domains or [])


def spend_budget(key: ApiKey) -> None:
    """Per-key limits by plan, in Flask-Limiter's storage (Redis when REDIS_URL is set, so every
    process shares the count). Per-second plans are also held to 60 times that per minute, the
    window the headers report; a breach of either is a 429."""
    plan = PLAN_LIMITS.get(key.plan) or PLAN_LIMITS["payg"]
    minute_item = RateLimitItemPerMinute(plan.per_minute)
    if plan.window.get_expiry() != 60:
        burst = spend(plan.window, KEY_SCOPE, key.id)
        if burst is not None and not burst.allowed:
            g.api_window = Window(plan.per_minute, 0, burst.reset)
            raise GatewayError(
                429,
                f"API rate limit exceeded: {plan.window.amount} per second for this key",
                {"Retry-After": str(burst.reset)},
            )
    spent = spend(minute_item, KEY_SCOPE, key.id)
    if spent is None:  # the counter store is down: served uncounted (as the sign-in budget)
        return
    g.api_window = Window(plan.per_minute, spent.remaining, spent.reset)
    if not spent.allowed:
        g.api_window = Window(plan.per_minute, 0, spent.reset)
        raise GatewayError(
            429,
            f"API rate limit exceeded: {plan.per_minute} per minute for this key",
            {"Retry-After": str(spent.reset)},
        )


def known_key() -> ApiKey:
    """The live key the request carries, or the gateway's 401 (none sent; unknown, malformed or revoked)."""
    if not key_value():
        raise GatewayError(401, NO_KEY)
    key = presented_key()
    if key is None:
        raise GatewayError(401, UNAUTHORIZED)
    return key


def pass_gateway(surface: str) -> KeyCaller:
    """Authenticate, entitle and limit the key the request carries - or a GatewayError (the meter
    counts the call once the API has answered it: `answer_and_meter`)."""
    key = known_key()
    spend_budget(key)  # before the entitlement check, so a refusal carries the key's window too
    if not entitled(key, surface):
        raise GatewayError(403, CANNOT_CONSUME)
    return KeyCaller(key)


def answer_and_meter(view: Callable, caller: KeyCaller, *args, **kwargs) -> Response:
    """The view's answer, counted once on the meter if it is a call: data, or a 404 (a lookup that
    matched nothing still cost a lookup). A 400 (the input was refused), any other refusal and a
    failure on our side are not counted. The gateway's unit of work: the meter is committed here."""
    try:
        response = view(caller, *args, **kwargs)
    except ApiError as refusal:
        if refusal.status == 404:
            _count_call(caller)
        raise
    _count_call(caller)
    return response


def _count_call(caller: KeyCaller) -> None:
    meter_request(caller.key)
    db.session.commit()


def refuse_key() -> None:
    """A key on a route no key may use: 401 for an unknown key, else 403 (with its window)."""
    key = presented_key()
    if key is None:
        raise GatewayError(401, UNAUTHORIZED if key_value() else NO_KEY)
    spend_budget(key)
    raise GatewayError(403, CANNOT_CONSUME)


def door(bearer_scope: str | None = None, key: str | None = API) -> Callable:
    """Route decorator: which callers a route admits, and the caller passed as first argument.

    `bearer_scope`: sign-in access tokens may call it with this scope (own data only; the view
    checks the profile). `key`: API keys may call it through the `api` or `widget` surface
    (None: no key may). A request with `x-api-key` always takes the key door."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(*args, **kwargs):
            if API_KEY_HEADER in request.headers:
                if key is None:
                    refuse_key()  # a sign-in-only route: checked as a key, then not entitled
                return answer_and_meter(view, pass_gateway(key), *args, **kwargs)
            if bearer_scope is not None:
                return view(authenticate(bearer_scope), *args, **kwargs)
            if key == WIDGET or bearer_value() is None:
                raise GatewayError(401, NO_KEY)  # neither an API key nor an access token
            # A valid bearer token on a catalog-wide route: the sign-in never reaches the catalog.
            authenticate("credits:read")
            raise ApiError(403, CATALOG_NEEDS_KEY, challenge("insufficient_scope", CATALOG_NEEDS_KEY))

        wrapper.required_scope = bearer_scope  # read by the OpenAPI test: the document names each door
        wrapper.key_surface = key
        return wrapper

    return decorate
