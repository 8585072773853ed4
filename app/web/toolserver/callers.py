"""Who is calling the tool server, behind one small interface.

The door (app/web/toolserver/door.py) asks `identify()` once per HTTP request, inside the Flask request
context it opened for that request, and keeps the answer for the request's tool call:

- `x-api-key` with a live secret key -> a `KeyCaller`: the whole catalog, each call drawing on the
  key's per-plan budget (shared with REST, in Redis when set) and counted once on `api_requests`
  when it answers;
- `Authorization: Bearer` with a live access token bound to the tool server (RFC 8707: asked for
  with `resource=<MCP_URL>`) -> a `MemberCaller`: a member signed in through an AI agent, reaching
  only that member's own data - the same reach as `/v1` with a bearer token (own profile and
  credits, own analytics on pro) - on the sign-in's budget, never metered (sign-in access);
- no credentials, an unknown or revoked key, a token that is unknown, expired, revoked or bound to
  another resource (a `/v1` token) -> 401 with `WWW-Authenticate: Bearer resource_metadata=...`
  (RFC 9728 5.1: where an agent learns how to get a token); a publishable key -> 403 (the
  gateway's words).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from flask import current_app, request

from app.models import ApiKey
from app.protocol.metadata import AGENT_SCOPES, resource_metadata_url
from app.protocol.tokens import bearer_value, live_bearer
from app.services.metering import meter_request
from app.store.tokens import StoredToken
from app.store.unit_of_work import commit
from app.web.api.auth import allowed, own_profile_id
from app.web.api.auth import challenge as bearer_challenge
from app.web.api.call_cost import call_cost
from app.web.api.envelope import ApiError
from app.web.api.gateway import (
    CANNOT_CONSUME,
    CATALOG_NEEDS_KEY,
    TOOLS,
    GatewayError,
    entitled,
    key_value,
    known_key,
    pay_gate,
    presented_key,
    spend_budget,
)
from app.web.api.limits import count_on, count_request, grant_budget

CREDITS, ANALYTICS = "credits:read", "analytics:read"
# The tools a member's token may call, each with the scope it needs (as its `/v1` route: a
# profile and its credits need credits:read, its charts analytics:read), on the member's own profile.
OWN_DATA_TOOLS = {"get_profile": CREDITS, "get_profile_credits": CREDITS, "get_profile_charts": ANALYTICS}
INVALID_TOKEN = "The access token is invalid, expired or revoked"


class ToolCaller(Protocol):
    """What the tool server needs of a caller."""

    @property
    def log_fields(self) -> dict[str, str]:
        """Who to name on the access line (never a secret)."""

    def admit(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """Before `tool` runs with `arguments`: spend this caller's budget, check its reach. Raises
        GatewayError or ApiError with the REST status and message."""

    def settle(self) -> None:
        """After `tool` answered: count the call (commits the unit of work)."""


@dataclass(frozen=True)
class KeyCaller:
    """A secret API key: the whole catalog, metered."""

    key: ApiKey

    @property
    def log_fields(self) -> dict[str, str]:
        return {"key_id": self.key.id, "key_prefix": self.key.prefix}

    def admit(self, tool: str, arguments: Mapping[str, Any]) -> None:
        spend_budget(self.key, call_cost(tool))  # a search counts more (app/web/api/call_cost.py)
        pay_gate(self.key)  # 402 when the owner's credits are used up or the ceiling reached

    def settle(self) -> None:
        meter_request(self.key)
        commit()


@dataclass(frozen=True)
class MemberCaller:
    """A member's access token for the tool server: their own data only, not metered."""

    token: StoredToken

    @property
    def log_fields(self) -> dict[str, str]:
        return {"client_id": self.token.client.client_id, "user_id": self.token.user_id}

    def admit(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """The sign-in's budget (as on `/v1`), then the reach: a catalog-wide tool is 403
        `insufficient_scope`; an own-data tool needs its scope now (the membership is read at each
        call: a downgrade takes analytics away at once) and the member's own profile id."""
        count_on(*grant_budget(self.token.grant_id))
        scope = OWN_DATA_TOOLS.get(tool)
        if scope is None:
            allowed(self.token, CREDITS)  # a token that reaches nothing at all says why first
            raise ApiError(403, CATALOG_NEEDS_KEY, bearer_challenge("insufficient_scope", CATALOG_NEEDS_KEY))
        caller = allowed(self.token, scope)
        requested = arguments.get("id_value")
        own_profile_id(caller, requested if isinstance(requested, str) else None)

    def settle(self) -> None:
        """Sign-in access is not metered: the unit of work ends, nothing is counted."""
        commit()


CALLER: ContextVar[ToolCaller] = ContextVar("credits_id.tool_caller")


def challenge(error: str | None = None, description: str | None = None) -> dict[str, str]:
    """The `WWW-Authenticate` of a 401 (RFC 9728 5.1, RFC 6750 3): where the tool server's
    protected resource metadata is, the scopes a sign-in for it asks, and, for a token that was
    refused, why."""
    params = [
        f'resource_metadata="{resource_metadata_url(current_app.config["MCP_URL"])}"',
        f'scope="{" ".join(AGENT_SCOPES)}"',  # what to ask for (MCP: the challenge's scope comes first)
    ]
    if error:
        params.append(f'error="{error}"')
    if description:
        params.append(f'error_description="{description}"')
    return {"WWW-Authenticate": "Bearer " + ", ".join(params)}


def identify() -> ToolCaller:
    """The caller of the request in the current Flask request context, or the refusal it gets
    (GatewayError, or the address budget's ApiError 429).

    A request without a live key draws on its address's budget first, exactly as on `/v1`
    (app/web/api/limits.py), so made-up keys cannot be tried without limit; so does a bearer token
    that is not live here. A request with both a key and a token takes the key door, as on `/v1`."""
    token = bearer_value(request.headers.get("Authorization"))
    if key_value() is None and token is not None:
        member = live_bearer(token, current_app.config["MCP_URL"])
        if member is not None:
            return MemberCaller(member)
        count_request()
        raise GatewayError(401, INVALID_TOKEN, challenge("invalid_token", INVALID_TOKEN))
    if presented_key() is None:
        count_request()
        try:
            known_key()  # raises the 401 that fits: no key, or not a live one
        except GatewayError as refusal:
            refusal.headers.update(challenge())
            raise
    key = known_key()
    if not entitled(key, TOOLS):
        raise GatewayError(403, CANNOT_CONSUME)
    return KeyCaller(key)
