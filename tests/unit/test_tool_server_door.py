"""The tool server's door builds the WSGI environ the gateway reads from the ASGI request: the
headers as WSGI names them, and the client address only as the trusted proxies allow."""

from __future__ import annotations

from types import SimpleNamespace

from app.web.toolserver.door import Door

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
