"""What a call costs of a key's rate-limit budgets: limits that reflect cost (issue 47).

A search reads three text indexes and ranks what they find; a lookup reads a row by its key. The
first costs the database one to two orders of magnitude more, so it counts for more: a search
(`POST /v1/search`, and the tool server's `search`) counts `CATALOG_SEARCH_WEIGHT` requests (10 by
default) against the key's per-second and per-minute budgets - never more than a whole window, so
a plan with 5 a second can still search once a second. Every other call counts one, as the spec's
limits say. The weight is the budget's only: the meter counts a search once, and bills it as one
call. `RateLimit-Remaining` is what is left in those units."""

from __future__ import annotations

from flask import current_app, request

WEIGHTED_ROUTES = frozenset({"api.search"})
WEIGHTED_TOOLS = frozenset({"search"})


def search_weight() -> int:
    return max(1, int(current_app.config["CATALOG_SEARCH_WEIGHT"]))


def call_cost(tool: str | None = None) -> int:
    """The units this call spends: a tool server call's by its `tool`, else the `/v1` route's."""
    weighted = tool in WEIGHTED_TOOLS if tool is not None else request.endpoint in WEIGHTED_ROUTES
    return search_weight() if weighted else 1


def weighted_note(cost: int) -> str:
    """What a 429 adds when the refused call was a weighted one."""
    return f" (a search counts as {cost} requests)" if cost > 1 else ""
