"""The MCP server: the official SDK's low-level `Server` with the catalog's tools, served over
Streamable HTTP.

The low-level server, not `MCPServer`'s decorators: the tools' input schemas are written out
(app/web/toolserver/tools.py) and their refusals are the REST messages, which the decorators would
replace with their own validation errors.

A tool call, in order (the caller was identified at the door):
  the tool's name        unknown -> the protocol's error (-32602), not a tool result
  the caller's budget    spent -> `isError` result `API rate limit exceeded: ...; retry after N s`
  the arguments and the read  -> `isError` `Invalid parameters supplied`, `Too big page...`, `Not found`
  the answer             -> counted once on `api_requests`, then the REST `data` as structured
                            content and as JSON text
A refused call is not counted. Refusals are tool results, not protocol errors, as the MCP spec
asks of errors a model can act on (wait, fix an argument, try another id); each carries the REST
status, message and request id in its structured content. Listing the tools, the handshake
(`server/discover`, `initialize`), `ping` and notifications are neither budgeted nor counted.

The catalog reads are short and mostly CPU: they run in the request's task, as a `/v1` request
runs on its worker's one thread (serve.py); the workers are the concurrency."""

from __future__ import annotations

import logging
import re
from typing import Any, cast

from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    ListToolsResult,
    PaginatedRequestParams,
    Tool,
    ToolAnnotations,
)
from pydantic_core import to_json

from app.core.extensions import db
from app.store.catalog_database import reading_the_catalog
from app.web.api.catalog_guard import catalog_call
from app.web.api.envelope import STATUS_MESSAGES, ApiError
from app.web.api.gateway import GatewayError
from app.web.api.limits import SERVICE_VERSION
from app.web.toolserver.callers import CALLER
from app.web.toolserver.door import DATABASE_DOWN, current_exchange
from app.web.toolserver.tools import BY_NAME, TOOLS, CatalogTool

NAME = "credits-id"
INSTRUCTIONS = (
    "The Credits ID music-credits catalog: verified credits (who did what on a recording), profiles of "
    "artists, writers and producers, tracks, albums, the credit-role taxonomy and per-profile chart "
    "analytics. Find ids with search or search_autocomplete, then read with the get_ tools; lists are "
    "pages (limit up to 50, offset) that end when offset >= totalCount. Each call counts on the key's "
    "meter. The data is licensed for in-app use by the key holder's own users: do not store it."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
log = logging.getLogger(__name__)
OAUTH_ERROR = re.compile(r'error="([a-z_]+)"')


def _listed(tool: CatalogTool) -> Tool:
    return Tool(
        name=tool.name,
        title=tool.title,
        description=f"{tool.description} (REST: {tool.maps_to})",
        input_schema=tool.input_schema,
        annotations=READ_ONLY,
    )


LISTED = ListToolsResult(tools=[_listed(tool) for tool in TOOLS])
WireResult = dict[str, Any]  # a result in its wire form (camelCase keys, JSON values)


def tool_result(text: str, structured: dict[str, Any], is_error: bool = False) -> WireResult:
    """A `CallToolResult` in its wire form, as the SDK's runner takes a handler's dict: the
    runner validates and shapes every result against the protocol version's schema once on the
    way out, so building the model here first would only walk the answer twice more (build,
    dump). The same fields the model dumps to (tests hold the two equal)."""
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error,
        "resultType": "complete",
    }


def answer(data: Any) -> WireResult:
    """The REST `data` as the result: structured, and the same JSON as text (for clients that read
    only text). A tool's structured content is a JSON object up to protocol 2025-11-25, so an array
    (the chart rows) comes under `items`. The text is written by pydantic's JSON writer (the
    SDK's own dependency, in Rust: the quicker one on a page of credits, docs/performance.md):
    compact and UTF-8 rather than `\\u` escapes, as `json.dumps(separators=(",", ":"),
    ensure_ascii=False)` writes it, down to the bytes but for a tiny float's notation (`0.00001`
    for `1e-05`, the same number)."""
    structured = data if isinstance(data, dict) else {"items": data}
    return tool_result(to_json(structured).decode(), structured)


def refusal(status: int, message: str, headers: dict[str, str]) -> WireResult:
    """A refused call as the model reads it: the REST message (with the wait, for a 429) in the
    text, and status, message, request id (and `retryAfter`) as structured content."""
    exchange = current_exchange()
    details: dict[str, Any] = {"code": status, "message": message}
    retry_after = headers.get("Retry-After")
    if retry_after is not None:
        seconds = int(retry_after)
        details["retryAfter"] = seconds
        details["message"] = f"{message}; retry after {seconds} second{'' if seconds == 1 else 's'}"
    challenged = OAUTH_ERROR.search(headers.get("WWW-Authenticate", ""))
    if challenged is not None:
        details["error"] = challenged.group(1)  # insufficient_scope: a member's token, a catalog-wide tool
    if exchange is not None:
        details["request_id"] = exchange.request_id
        exchange.refusal = message  # for the key's recent requests
    return tool_result(details["message"], details, is_error=True)


async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListToolsResult:
    return LISTED


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> WireResult:
    tool = BY_NAME.get(params.name)
    if tool is None:
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name[:100]}")
    exchange = current_exchange()
    if exchange is not None:
        exchange.tool = tool.name
    status, result = _run(tool, params.arguments or {})
    if exchange is not None:
        exchange.outcome = status
    return result


def _run(tool: CatalogTool, arguments: dict[str, Any]) -> tuple[int, WireResult]:
    """Budget, read, count: one unit of work, committed once when the call answers."""
    caller = CALLER.get()
    try:
        with catalog_call(tool.name):  # a time bound (and a slot for a search), as on /v1 (503 when refused)
            caller.admit(tool.name, arguments)
            with reading_the_catalog():  # on the catalog's replica, when it has one
                data = tool.call(arguments)
            caller.settle()
    except (ApiError, GatewayError) as refused:
        db.session.rollback()
        return refused.status, refusal(refused.status, refused.message, refused.headers)
    except DATABASE_DOWN:
        db.session.rollback()
        log.warning("the database is unreachable: tool call %s refused with 503", tool.name)
        return 503, refusal(503, STATUS_MESSAGES[503], {"Retry-After": "5"})
    return 200, answer(data)


def no_header_parameters(name: str) -> None:
    """What the transport checks `Mcp-Param-*` headers against (2026-07-28): no tool's schema marks
    an argument to be sent as a header (`x-mcp-header`), so nothing - rather than the SDK running
    the tool listing for every call to find that out."""
    return


async def note_method(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
    """Middleware: the MCP method, for the request's access line."""
    exchange = current_exchange()
    if exchange is not None:
        exchange.method = ctx.method
    return await call_next(ctx)


def build_server() -> Server:
    server: Server = Server(
        NAME,
        version=SERVICE_VERSION,
        title="Credits ID catalog",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        # The SDK's runner takes a handler's result as a model or as its wire dict (tool_result).
        on_call_tool=cast(Any, call_tool),
        get_tool_input_schema=no_header_parameters,
    )
    # Instead of the SDK's OpenTelemetry middleware (no exporter here): the method for the access line.
    server.middleware[:] = [note_method]
    return server
