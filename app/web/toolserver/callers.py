"""Who is calling the tool server, behind one small interface.

The door (app/web/toolserver/door.py) asks `identify()` once per HTTP request, inside the Flask request
context it opened for that request, and keeps the answer for the request's tool call:

- `x-api-key` with a live secret key -> a `KeyCaller`: the whole catalog, each call drawing on the
  key's per-plan budget (shared with REST, in Redis when set) and counted once on `api_requests`
  when it answers;
- no credentials, an unknown or revoked key -> 401; a publishable key -> 403 (the gateway's words).

A caller of another kind (a member's own access token for the tool server, with its own reach and
no meter) is another class with the same three members; `identify` is where it would be told
apart, and `challenge` is what a 401 then carries (`WWW-Authenticate: Bearer resource_metadata=...`).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from app.models import ApiKey
from app.services.metering import meter_request
from app.store.unit_of_work import commit
from app.web.api.gateway import (
    CANNOT_CONSUME,
    TOOLS,
    GatewayError,
    entitled,
    known_key,
    pay_gate,
    presented_key,
    spend_budget,
)
from app.web.api.limits import count_request


class ToolCaller(Protocol):
    """What the tool server needs of a caller."""

    @property
    def log_fields(self) -> dict[str, str]:
        """Who to name on the access line (never a secret)."""

    def admit(self, tool: str) -> None:
        """Before `tool` runs: spend this caller's budget, check its reach. Raises GatewayError
        or ApiError with the REST status and message."""

    def settle(self) -> None:
        """After `tool` answered: count the call (commits the unit of work)."""


@dataclass(frozen=True)
class KeyCaller:
    """A secret API key: the whole catalog, metered."""

    key: ApiKey

    @property
    def log_fields(self) -> dict[str, str]:
        return {"key_id": self.key.id, "key_prefix": self.key.prefix}

    def admit(self, tool: str) -> None:
        spend_budget(self.key)
        pay_gate(self.key)  # 402 when the owner's credits are used up or the ceiling reached

    def settle(self) -> None:
        meter_request(self.key)
        commit()


CALLER: ContextVar[ToolCaller] = ContextVar("credits_id.tool_caller")


def challenge() -> dict[str, str]:
    """The headers of a 401: none while keys are the only credential. Where sign-in access for
    agents will name its protected resource metadata (RFC 9728, `resource_metadata=`)."""
    return {}


def identify() -> ToolCaller:
    """The caller of the request in the current Flask request context, or the refusal it gets
    (GatewayError, or the address budget's ApiError 429).

    A request without a live key draws on its address's budget first, exactly as on `/v1`
    (app/web/api/limits.py), so made-up keys cannot be tried without limit."""
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
