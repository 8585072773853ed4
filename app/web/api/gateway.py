"""The key door: what stands in front of the catalog API (`/v1`) and the widget API (`/embed/v1`)
for requests that carry an `x-api-key`.

In order, each refusal in the gateway's own shape `{message, request_id}` (no envelope):
  no key                                   -> 401 `No API key found in request` (on a route an
                                              access token may use too, with the RFC 6750
                                              `WWW-Authenticate: Bearer realm=...` challenge)
  unknown, malformed or revoked key        -> 401 `Unauthorized`
  the key's per-plan budget spent          -> 429 with `Retry-After`, `RateLimit-Remaining: 0`
  key not entitled to the route            -> 403 `You cannot consume this service`
    (a publishable key on `/v1`; a publishable key on the widget API from a page whose
    Origin/Referer is not one of its domains; any key on a sign-in-only route such as `/v1/me`)
  the owner's prepaid credits used up, or  -> 402 `Payment required: ...` saying what to do
    the month's spend ceiling reached          (`pay_gate`: app/services/billing/standing.py, the
                                               standing kept per owner for BILLING_STANDING_SECONDS,
                                               so no billing row is read per request)
Then the view runs with the key, and the request counts once on the `api_requests` meter
(app/services/metering.py, committed here) when the API has answered it: with data, or with a 404 for an
identifier that matched nothing. A request the API refuses as malformed (400) is no call, nor is
one that failed on our side: nobody pays for bad input or for our errors (`answer_and_meter`).

Routes say which doors they have with `door(...)`: a bearer access token (sign-in, own data only)
and/or an API key (catalog). A request with `x-api-key` always takes the key door; a bearer token
on a catalog-wide route is refused with 403 `insufficient_scope` (a sign-in never reaches the
wider catalog).

Workspace keys (`mwk_`, a member's, made on the account page for one of their rosters) take their
own branch, chosen by the value's prefix before anything is read (`pass_workspace`): the same one
indexed lookup (owner joined: a suspended member's keys are paused), the workspace budget (60 a
minute and a hard cap of 10,000 a UTC day, `_day_refused`), then reach: only the `/v1` routes that
say `door(..., roster=True)` (a profile, its credits, charts and collaborators), and only for a
profile on the key's roster now (one lookup by primary key per request, so a profile taken off the
roster is out of reach at once). Everything else is 403 `You cannot consume this service`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import wraps
from typing import NoReturn
from urllib.parse import urlsplit

from flask import Response, current_app, g, jsonify, request
from limits import RateLimitItemPerDay, RateLimitItemPerMinute

from app.core import logs
from app.core.extensions import db
from app.models import ApiKey
from app.services.apikeys import WORKSPACE_PREFIX, PlanLimits, domain_allows, limits_of, live_key
from app.services.billing.standing import ceiling_warning, refusal, standing_of
from app.services.mail import send_later
from app.services.metering import meter_request
from app.services.rosters import reaches
from app.services.throttle import Budget, Spent, spend_in_turn
from app.store.catalog_database import reading_the_catalog
from app.web.api.auth import authenticate, bearer_value, challenge
from app.web.api.call_cost import call_cost, weighted_note
from app.web.api.catalog_guard import catalog_call
from app.web.api.envelope import ApiError, Window

API_KEY_HEADER = "x-api-key"
NO_KEY = "No API key found in request"
UNAUTHORIZED = "Unauthorized"
CANNOT_CONSUME = "You cannot consume this service"
CATALOG_NEEDS_KEY = "An access token reaches only its own member's data; the catalog needs an API key"
KEY_SCOPE = "api-key"  # the limiter's namespace for per-key budgets
DAY_SCOPE = "api-key-day"  # ... and for daily caps, one counter per key and UTC day (`day_counter`)

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
        key = environ[_LIVE_KEY] = live_key(key_value())
        if key is not None:
            logs.note_key(key.id, key.prefix)  # the access line names the key (never its secret)
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
    return surface == WIDGET and domain_allows(key.domains, _page_host())


def spend_budget(key: ApiKey, cost: int | None = None) -> None:
    """Per-key limits by plan, in Flask-Limiter's storage (Redis when REDIS_URL is set, so every
    process shares the count). Per-second plans are also held to 60 times that per minute, the
    window the headers report; a breach of either is a 429. An enterprise key's custom limits
    (app/services/billing/enterprise.py) take the plan's place. A plan with a daily cap (workspace
    keys) is counted against it too (`_day_refused`). The budgets are taken in turn, one round trip
    on Redis (`spend_in_turn`): a request refused by one is not counted against the next. A call
    counts `cost` requests (default: its route's, app/web/api/call_cost.py - a search counts more),
    never more than a whole window; against a daily cap it counts once."""
    plan = limits_of(key)  # the plan's, or an enterprise key's own
    units = call_cost() if cost is None else cost
    minute_item = RateLimitItemPerMinute(plan.per_minute)
    budgets: list[Budget] = []
    if plan.window.get_expiry() != 60:
        budgets.append(Budget(plan.window, KEY_SCOPE, key.id, min(units, plan.window.amount)))
    budgets.append(Budget(minute_item, KEY_SCOPE, key.id, min(units, plan.per_minute)))
    now = datetime.now(UTC)
    if plan.per_day is not None:
        budgets.append(Budget(RateLimitItemPerDay(plan.per_day), DAY_SCOPE, day_counter(key.id, now.date())))
    spent = spend_in_turn(budgets)
    if spent is None:  # the counter store is down: served uncounted (as the sign-in budget)
        return
    taken = iter(spent)
    if plan.window.get_expiry() != 60:
        burst = next(taken)
        if not burst.allowed:
            g.api_window = Window(plan.per_minute, 0, burst.reset)
            raise GatewayError(
                429,
                f"API rate limit exceeded: {plan.window.amount} per second for this key{weighted_note(units)}",
                {"Retry-After": str(burst.reset)},
            )
    minute = next(taken)
    g.api_window = Window(plan.per_minute, minute.remaining, minute.reset)
    if not minute.allowed:
        g.api_window = Window(plan.per_minute, 0, minute.reset)
        raise GatewayError(
            429,
            f"API rate limit exceeded: {plan.per_minute} per minute for this key{weighted_note(units)}",
            {"Retry-After": str(minute.reset)},
        )
    if plan.per_day is not None:
        _day_refused(plan, next(taken), now)


def day_counter(key_id: str, day: date) -> str:
    """The name of a key's count for one UTC day: a new day is a new counter, whatever the
    counter store's own clock says (each one expires a day after its first request)."""
    return f"{key_id}/{day.isoformat()}"


def seconds_left_today(now: datetime) -> int:
    """Whole seconds until the UTC day ends (at least 1)."""
    midnight = datetime.combine(now.date() + timedelta(days=1), time(), UTC)
    return max(1, math.ceil((midnight - now).total_seconds()))


def _day_refused(plan: PlanLimits, spent: Spent, now: datetime) -> None:
    """A plan's hard cap on a UTC day's requests (workspace keys: 10,000), counted beside the
    minute's budget in the same storage. Past it, 429 until the day ends (`Retry-After` says when);
    the answers carry the day's figures as `X-RateLimit-Limit-Day` / `-Remaining-Day`."""
    assert plan.per_day is not None
    minute = g.get("api_window") or Window(plan.per_minute, plan.per_minute, 60)
    if not spent.allowed:
        until = seconds_left_today(now)
        g.api_window = Window(plan.per_minute, 0, until, plan.per_day, 0)
        raise GatewayError(
            429,
            f"API rate limit exceeded: {plan.per_day} per day for this key (the count starts again at 00:00 UTC)",
            {"Retry-After": str(until)},
        )
    g.api_window = replace(minute, day_limit=plan.per_day, day_remaining=spent.remaining)


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
    pay_gate(key)
    return KeyCaller(key)


def billing_url() -> str:
    return f"{current_app.config['ISSUER_URL'].rstrip('/')}/console/billing"


def pay_gate(key: ApiKey) -> None:
    """Refuse a key whose owner's prepaid credits are used up or whose month reached the spend
    ceiling: 402 in the gateway's shape, with what to do. At 80 % of the ceiling the owner gets
    one mail a month (written and committed here, sent after the commit). Workspace keys are a
    member's, not billed."""
    if key.is_workspace:
        return
    now = standing_of(key.owner_id)
    message = refusal(now, billing_url())
    if message is not None:
        raise GatewayError(402, message)
    if now.near_ceiling:
        mail = ceiling_warning(key.owner, now, billing_url())
        if mail is not None:
            db.session.commit()
            send_later(mail)


def answer_and_meter(view: Callable, caller: KeyCaller, *args, **kwargs) -> Response:
    """The view's answer, counted once on the meter if it is a call: data, or a 404 (a lookup that
    matched nothing still cost a lookup). A 400 (the input was refused), any other refusal and a
    failure on our side are not counted. The gateway's unit of work: the meter is committed here."""
    try:
        with reading_the_catalog():  # on the catalog's replica, when it has one; the meter is not
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


def refuse_key() -> NoReturn:
    """A key on a route no key may use: 401 for an unknown key, else 403 (with its window)."""
    key = presented_key()
    if key is None:
        raise GatewayError(401, UNAUTHORIZED if key_value() else NO_KEY)
    spend_budget(key)
    raise GatewayError(403, CANNOT_CONSUME)


# -- workspace keys (mwk_): a branch of their own, chosen by the prefix -------------------------------


def is_workspace_value(value: str | None) -> bool:
    return value is not None and value.startswith(WORKSPACE_PREFIX)


def pass_workspace(surface: str | None, roster_route: bool, profile_id: str | None) -> KeyCaller:
    """Authenticate and limit a workspace key, then check its reach: a route open to roster keys on
    `/v1`, for a profile on the key's roster now - or a GatewayError."""
    key = presented_key()
    if key is None or not key.is_workspace:
        raise GatewayError(401, UNAUTHORIZED)
    spend_budget(key)  # 60 a minute and 10,000 a UTC day; before reach, as for every key
    if surface != API or not roster_route or not reaches(key.roster_id, profile_id):
        raise GatewayError(403, CANNOT_CONSUME)
    return KeyCaller(key)


# -- routes ------------------------------------------------------------------------------------------


def _key_caller(surface: str | None, roster_route: bool, profile_id: str | None) -> KeyCaller:
    """The caller behind the request's `x-api-key`, through the branch its prefix names."""
    if is_workspace_value(key_value()):
        return pass_workspace(surface, roster_route, profile_id)
    if surface is None:
        refuse_key()  # a sign-in-only route: checked as a key, then not entitled
    return pass_gateway(surface)


def door(bearer_scope: str | None = None, key: str | None = API, roster: bool = False) -> Callable:
    """Route decorator: which callers a route admits, and the caller passed as first argument.

    `bearer_scope`: sign-in access tokens may call it with this scope (own data only; the view
    checks the profile). `key`: API keys may call it through the `api` or `widget` surface
    (None: no key may). `roster`: workspace keys may call it for a profile (`profile_id`) on their
    roster. A request with `x-api-key` always takes the key door."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(*args, **kwargs):
            if API_KEY_HEADER in request.headers:
                with catalog_call():  # a time bound, a slot for a search: the catalog never starves the sign-in
                    caller = _key_caller(key, roster, kwargs.get("profile_id"))
                    return answer_and_meter(view, caller, *args, **kwargs)
            if bearer_scope is not None:
                if key is not None and bearer_value() is None:
                    # Neither door's credential on a route with both: the spec's gateway refusal,
                    # still carrying RFC 6750's bare challenge so an OAuth client knows to send a token.
                    raise GatewayError(401, NO_KEY, challenge())
                return view(authenticate(bearer_scope), *args, **kwargs)
            if key == WIDGET or bearer_value() is None:
                raise GatewayError(401, NO_KEY)  # neither an API key nor an access token
            # A valid bearer token on a catalog-wide route: the sign-in never reaches the catalog.
            authenticate("credits:read")
            raise ApiError(403, CATALOG_NEEDS_KEY, challenge("insufficient_scope", CATALOG_NEEDS_KEY))

        wrapper.required_scope = bearer_scope  # read by the OpenAPI test: the document names each door
        wrapper.key_surface = key
        wrapper.roster_reach = roster
        return wrapper

    return decorate
