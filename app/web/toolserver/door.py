"""The tool server's door: an ASGI middleware in front of the MCP SDK's Streamable HTTP endpoint.

Every HTTP request to the endpoint is served inside a Flask request context of its own (built from
the ASGI request: method, path, headers, client address after the trusted proxies), so the key is
looked up, budgeted and metered by the gateway's own functions on the request's own database
session, and every log line written meanwhile carries the request's id. The context is pushed
before the SDK sees the request and popped after it answered; the SDK runs a Streamable HTTP
request's handler in the request's task (or a task started from it), which sees that context.

Before the SDK reads a byte, the caller is identified (app/web/toolserver/callers.py). A refusal is
an HTTP status the MCP clients act on - 401 (which, with sign-in for agents, will carry
`WWW-Authenticate`), 403, 429 with `Retry-After` for an address out of budget, 503 when the
database is down - with a JSON-RPC error body (`id: null`: the request was not read) whose
message is the gateway's, so a client shows `No API key found in request` rather than a bare
status. Every response carries the request id (`X-Request-Id`, `X-Gateway-Request-Id`), the
key's window (`RateLimit-*`) once a call drew on it, and `Cache-Control: no-store`.

One access line per request (app/core/logs.py's JSON): the MCP method, the tool and the status its
call answered, latency, the key's id and prefix (never the key), the address and request id."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any, cast

from flask import Flask, g
from flask.ctx import RequestContext
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.types import ASGIApp, Receive, Scope, Send
from werkzeug.middleware.proxy_fix import ProxyFix

from app.core import logs
from app.core.extensions import db
from app.store.unit_of_work import runs_again_after
from app.web.api.envelope import STATUS_MESSAGES, ApiError
from app.web.api.gateway import GatewayError
from app.web.api.limits import GATEWAY_REQUEST_ID, Window
from app.web.key_activity import record_tool_request
from app.web.toolserver.callers import CALLER, ToolCaller, identify

DATABASE_DOWN = (OperationalError, InterfaceError, PoolTimeoutError)
REFUSED = -32600  # JSON-RPC's Invalid Request: the HTTP status says why (data.status too)
log = logging.getLogger(__name__)


@dataclass
class Exchange:
    """What one HTTP request to the tool server did, for its access line."""

    request_id: str
    started: float
    method: str | None = None  # the MCP method (tools/call, tools/list, server/discover, ...)
    tool: str | None = None
    outcome: int | None = None  # the status a tool call answered (the REST status it maps to)
    refusal: str | None = None  # why the door or the call refused (the key's recent requests)
    caller: dict[str, str] = field(default_factory=dict)


def _nothing(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    """The app behind the door's ProxyFix: the rewritten environ is all that is wanted of it."""
    return ()


EXCHANGE: ContextVar[Exchange] = ContextVar("credits_id.tool_exchange")


class ToolRequestContext(RequestContext):
    """The Flask request context a tool server request runs in, without what Flask does for a
    request it routes itself: no URL is matched against the provider's routes (the endpoint is
    the SDK's; `request.url_rule` stays None, as an unmatched path leaves it), and no session
    cookie is read (the door is given a null session: agents carry no browser session and
    nothing behind the door reads one)."""

    def match_request(self) -> None:
        return


def current_exchange() -> Exchange | None:
    return EXCHANGE.get(None)


class Door:
    """Wraps the tool server's ASGI app; requests to `path` pass only with an identified caller."""

    def __init__(self, app: ASGIApp, flask_app: Flask, path: str, endpoint: ASGIApp | None = None) -> None:
        """`app` serves the lifespan and every other path; `endpoint` (the SDK's Streamable HTTP
        handler, default `app`) the requests to `path`, which the door passes straight to it."""
        self.app, self.flask_app, self.path = app, flask_app, path
        self.endpoint = endpoint or app
        hops = int(flask_app.config.get("TRUSTED_PROXY_HOPS", 0))
        # werkzeug's own rule for the client address behind `hops` trusted proxies, as the provider's.
        self._proxied = ProxyFix(_nothing, x_for=hops, x_proto=hops, x_host=hops) if hops else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)  # the lifespan; any other path is the app's 404
            return
        environ = self._environ(scope)
        flask_app = self.flask_app
        context = ToolRequestContext(
            flask_app, environ, session=flask_app.session_interface.make_null_session(flask_app)
        )
        context.push()
        exchange = Exchange(logs.request_id_of(environ), time.perf_counter())
        g.request_id = exchange.request_id  # every log line meanwhile carries it
        exchange_token = EXCHANGE.set(exchange)
        status = 500
        try:

            async def send_with_headers(message: MutableMapping[str, Any]) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    message = {**message, "headers": [*message.get("headers", []), *self._headers(exchange)]}
                await send(message)

            caller = self._identify()
            if not isinstance(caller, Exception):
                exchange.caller = caller.log_fields
                caller_token = CALLER.set(caller)  # seen by the handler: this task's, or one it starts
                try:
                    await self._serve(scope, receive, send_with_headers)
                finally:
                    CALLER.reset(caller_token)
            else:
                exchange.refusal = caller.message
                await self._refuse(caller, send_with_headers)
        finally:
            record_tool_request(exchange.outcome or status, exchange.refusal, exchange.tool or exchange.method)
            self._write_access_line(environ, exchange, status)
            EXCHANGE.reset(exchange_token)
            context.pop()

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The endpoint, called directly rather than through a router and middleware stack for
        one path; what the stack's error middleware did is kept: a failure before any answer is
        a bare 500 (never a stack trace), then raised to be logged."""
        started = False

        async def watched(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.endpoint(scope, receive, watched)
        except Exception:
            if not started:
                body = b"Internal Server Error"
                headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(body))]
                await send({"type": "http.response.start", "status": 500, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            raise

    def _environ(self, scope: Scope) -> dict[str, Any]:
        """The WSGI environ Flask and the gateway read: the request line, headers and addresses."""
        server = scope.get("server") or ("127.0.0.1", 80)
        client = scope.get("client") or ("", 0)
        environ: dict[str, Any] = {
            "REQUEST_METHOD": scope["method"],
            "SCRIPT_NAME": "",
            "PATH_INFO": scope["path"],
            "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
            "SERVER_NAME": server[0],
            "SERVER_PORT": str(server[1]),
            "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
            "REMOTE_ADDR": client[0],
            "wsgi.url_scheme": scope.get("scheme", "http"),
            "wsgi.input": BytesIO(),  # the body is the SDK's to read
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1").upper().replace("-", "_")
            key = name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + name
            value = raw_value.decode("latin-1")
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        if self._proxied is not None:
            self._proxied(environ, cast(Any, None))  # it rewrites the environ, then calls _nothing
        return environ

    @staticmethod
    def _identify() -> ToolCaller | ApiError | GatewayError:
        """The caller, or the refusal to answer. A pooled connection found dead by this, the
        request's first statement, is replaced and the lookup run again."""
        for attempt in (1, 2):
            try:
                return identify()
            except (GatewayError, ApiError) as refusal:
                return refusal
            except DBAPIError as error:
                if attempt == 1 and runs_again_after(error):
                    db.session.remove()
                    g.db_statements = 0
                    continue
                if isinstance(error, DATABASE_DOWN):
                    log.warning("the database is unreachable: tool server request refused with 503")
                    return ApiError(503, STATUS_MESSAGES[503], {"Retry-After": "5"})
                raise
        raise AssertionError("unreachable")

    @staticmethod
    def _headers(exchange: Exchange) -> list[tuple[bytes, bytes]]:
        headers = {
            logs.REQUEST_ID_HEADER: exchange.request_id,
            GATEWAY_REQUEST_ID: exchange.request_id,
            # Data is served live and must not be stored by the consumer (spec, data-use terms 2).
            "Cache-Control": "no-store",
        }
        window: Window | None = g.get("api_window")
        if window is not None:
            headers.update(window.headers())
        return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]

    @staticmethod
    async def _refuse(refusal: ApiError | GatewayError, send: Send) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": REFUSED,
                    "message": refusal.message,
                    "data": {"status": refusal.status, "request_id": g.request_id},
                },
            },
            separators=(",", ":"),
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers += [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in refusal.headers.items()
        ]
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _write_access_line(environ: dict[str, Any], exchange: Exchange, status: int) -> None:
        logs.access_log.info(
            "tool server request",
            extra={
                "method": environ["REQUEST_METHOD"],
                "path": environ["PATH_INFO"],
                "endpoint": exchange.method,
                "tool": exchange.tool,
                "status": exchange.outcome or status,
                "http_status": status,
                "latency_ms": round((time.perf_counter() - exchange.started) * 1000, 2),
                **exchange.caller,
                "remote_addr": environ.get("REMOTE_ADDR"),
                "request_id": exchange.request_id,
            },
        )
