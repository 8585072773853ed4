"""The tool server's door builds the WSGI environ the gateway reads from the ASGI request: the
headers as WSGI names them, and the client address only as the trusted proxies allow. It passes
the endpoint's requests straight to the SDK's handler inside the request's Flask context, and a
tool call's result is built in the wire form the SDK's model dumps to."""

from __future__ import annotations

import asyncio
import contextvars
import json
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from flask import request
from mcp.types import CallToolResult, TextContent
from mcp_types.methods import serialize_server_result

from app.web.toolserver.callers import CALLER
from app.web.toolserver.door import Door
from app.web.toolserver.server import answer, refusal
from tests.key_support import make_key

SCOPE = {
    "type": "http",
    "method": "POST",
    "scheme": "http",
    "path": "/mcp",
    "query_string": b"",
    "http_version": "1.1",
    "headers": [
        (b"x-api-key", b"msk_abc"),
        (b"content-type", b"application/json"),
        (b"content-length", b"2"),
        (b"x-forwarded-for", b"198.51.100.7, 203.0.113.9"),
        (b"accept", b"application/json"),
        (b"accept", b"text/event-stream"),
    ],
    "client": ("10.0.0.2", 40000),
    "server": ("127.0.0.1", 8001),
}


def door(hops: int) -> Door:
    return Door(lambda *_: None, SimpleNamespace(config={"TRUSTED_PROXY_HOPS": hops}), "/mcp")  # type: ignore[arg-type]


def test_the_environ_carries_the_request_as_wsgi_names_it():
    environ = door(0)._environ(SCOPE)
    assert environ["HTTP_X_API_KEY"] == "msk_abc"
    assert environ["CONTENT_TYPE"] == "application/json" and environ["CONTENT_LENGTH"] == "2"
    assert environ["HTTP_ACCEPT"] == "application/json,text/event-stream"  # repeated headers joined
    assert (environ["REQUEST_METHOD"], environ["PATH_INFO"]) == ("POST", "/mcp")
    assert environ["REMOTE_ADDR"] == "10.0.0.2"  # no trusted proxy: X-Forwarded-For is not believed


def test_the_client_address_behind_one_trusted_proxy():
    assert door(1)._environ(SCOPE)["REMOTE_ADDR"] == "203.0.113.9"
    assert door(2)._environ(SCOPE)["REMOTE_ADDR"] == "198.51.100.7"


# -- behind the door, in-process: the endpoint served straight from the door -------------------------


def _run(awaitable) -> None:
    """Run a coroutine to its end in a thread of its own, with this test's context (its app
    context): a real-browser test earlier in the session may leave its event loop running in this
    thread, where `asyncio.run` refuses to start another."""
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1) as thread:
        thread.submit(context.run, asyncio.run, awaitable).result()


def _serve(asgi, scope: dict, body: bytes = b"") -> list[dict]:
    """One request through an ASGI app, in-process; the messages it sent."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message) -> None:
        sent.append(dict(message))

    _run(asgi(scope, receive, send))
    return sent


def _keyed(value: str, cookie: bool = False) -> dict:
    headers = [(b"host", b"127.0.0.1:8001"), (b"x-api-key", value.encode())]
    if cookie:  # a browser's session cookie, which the door never reads
        headers.append((b"cookie", b"session=not-a-signed-session"))
    return {**SCOPE, "headers": headers, "client": ("127.0.0.1", 40000)}


def test_the_endpoint_runs_in_the_requests_flask_context_with_the_caller_known(app):
    _, value = make_key()
    seen: dict = {}

    async def endpoint(scope, receive, send) -> None:
        seen["key"] = request.headers.get("x-api-key")
        seen["url_rule"] = request.url_rule  # no provider route is matched for the tool server's path
        seen["caller"] = CALLER.get().log_fields["key_prefix"]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    behind = Door(_not_called, app, "/mcp", endpoint=endpoint)
    sent = _serve(behind, _keyed(value, cookie=True))
    assert sent[0]["status"] == 200
    assert seen == {"key": value, "url_rule": None, "caller": value[: len(seen["caller"])]}
    headers = dict(sent[0]["headers"])
    assert headers[b"cache-control"] == b"no-store" and headers[b"x-request-id"]


def test_a_failure_behind_the_door_is_a_bare_500_and_is_raised_to_be_logged(app):
    _, value = make_key()

    async def endpoint(scope, receive, send) -> None:
        raise RuntimeError("secret detail")

    sent: list[dict] = []
    behind = Door(_not_called, app, "/mcp", endpoint=endpoint)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message) -> None:
        sent.append(dict(message))

    with pytest.raises(RuntimeError):
        _run(behind(_keyed(value), receive, send))
    assert sent[0]["status"] == 500
    assert sent[1]["body"] == b"Internal Server Error"  # no stack trace, no detail


def test_other_paths_and_the_lifespan_go_to_the_app_not_the_endpoint(app):
    reached: list[str] = []

    async def other(scope, receive, send) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    behind = Door(other, app, "/mcp", endpoint=_not_called)
    assert _serve(behind, {**SCOPE, "path": "/elsewhere"})[0]["status"] == 404
    assert reached == ["/elsewhere"]


async def _not_called(scope, receive, send) -> None:
    raise AssertionError("not this app")


# -- the results a tool call answers ---------------------------------------------------------------

# Beside plain values, what a JSON writer must escape (quotes, a backslash, a control character)
# and what it may leave as it is (non-ASCII, U+2028): the text is written as json.dumps writes it.
DATA = {
    "totalCount": 1,
    "items": [{"name": 'Zoë "Z" \\ \x01 \u2028 ♪', "roles": ["Producer"], "score": 1.5, "gone": None}],
}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_a_tool_result_in_wire_form_is_what_the_sdk_makes_of_its_model(version):
    """The handler's dict and the SDK's `CallToolResult` model come out the same on every protocol
    version the server speaks, answers and refusals alike."""
    model = CallToolResult(
        content=[TextContent(text=json.dumps(DATA, separators=(",", ":"), ensure_ascii=False))],
        structured_content=DATA,
    )
    wire = answer(DATA)
    assert wire == model.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert serialize_server_result("tools/call", version, wire) == serialize_server_result(
        "tools/call", version, model.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    refused = refusal(429, "API rate limit exceeded", {"Retry-After": "3"})
    refused_model = CallToolResult(
        content=[TextContent(text="API rate limit exceeded; retry after 3 seconds")],
        structured_content={"code": 429, "message": "API rate limit exceeded; retry after 3 seconds", "retryAfter": 3},
        is_error=True,
    )
    assert refused == refused_model.model_dump(by_alias=True, mode="json", exclude_none=True)
