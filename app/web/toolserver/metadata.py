"""The tool server's protected resource metadata (RFC 9728): the document an AI agent reads after
its first 401 (whose `WWW-Authenticate` points here) to learn which authorization server issues
tokens for this resource and what to ask for. Published at the path RFC 9728 3.1 derives from
MCP_URL (`/.well-known/oauth-protected-resource/mcp`) and at the root form older clients try.

An ASGI layer in front of the door: a GET or HEAD of either path gets the prepared bytes, cacheable
and readable from any origin (a browser-based client such as the MCP Inspector fetches it); every
other request goes on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from app.core.capabilities import RESOURCE_METADATA_PATH
from app.protocol.metadata import PreparedDocument, protected_resource_metadata, resource_metadata_url

MAX_AGE = 3600


class ResourceMetadata:
    """Answers the metadata paths; hands everything else to `app`."""

    def __init__(self, app: ASGIApp, config: Mapping[str, Any]) -> None:
        self.app = app
        self.document = PreparedDocument(protected_resource_metadata(config))
        self.paths = {RESOURCE_METADATA_PATH, urlsplit(resource_metadata_url(config["MCP_URL"])).path}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        headers = [
            (b"access-control-allow-origin", b"*"),
            (b"cache-control", f"public, max-age={MAX_AGE}".encode()),
            (b"etag", self.document.etag.encode()),
        ]
        if method == "OPTIONS":  # a browser's preflight
            headers += [(b"access-control-allow-methods", b"GET, HEAD"), (b"access-control-max-age", b"86400")]
            await send({"type": "http.response.start", "status": 204, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if method not in ("GET", "HEAD"):
            headers.append((b"allow", b"GET, HEAD, OPTIONS"))
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        body = self.document.body
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
