"""The tool server's ASGI application: what granian serves on the tool server's own port
(`python serve.py` starts it beside the provider; `serve.py tools` alone), built per worker by
asgi.py's `create_tool_server` (granian's factory mode).

The provider stays a WSGI app: its sign-in is not put behind an ASGI adapter. The tool server is
ASGI because the SDK's Streamable HTTP transport is; it builds the same Flask app as the provider
(settings, database, Redis, logs) and reads the catalog through it."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask
from mcp.server.transport_security import TransportSecuritySettings

from app.core.config import is_loopback_host
from app.web.toolserver.door import Door
from app.web.toolserver.metadata import ResourceMetadata
from app.web.toolserver.server import build_server

# A tool call's arguments are a few short strings; a body this size is already far beyond one.
MAX_BODY_BYTES = 64 * 1024
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def endpoint_path(mcp_url: str) -> str:
    """Where the endpoint is served: MCP_URL's path."""
    return urlsplit(mcp_url).path or "/"


def transport_security(mcp_url: str, issuer_url: str) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding guard (MCP's Streamable HTTP transport: servers validate `Origin`):
    the `Host` must be MCP_URL's or a loopback address (a proxy that rewrites it to this server's
    own), and a browser's `Origin` MCP_URL's or the issuer's - loopback pages too on a local run."""
    url = urlsplit(mcp_url)
    hosts = [url.netloc, f"{url.hostname}:*", *LOOPBACK_HOSTS]
    origins = [f"{url.scheme}://{url.netloc}", issuer_url]
    if is_loopback_host(url.hostname):
        origins += LOOPBACK_ORIGINS
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def tool_server_app(flask_app: Flask) -> ResourceMetadata:
    """The Streamable HTTP endpoint at MCP_URL's path, stateless (any worker answers any request:
    no session to keep), answering JSON rather than an event stream (a tool answers at once), behind
    the door, beside its protected resource metadata (RFC 9728)."""
    mcp_url, path = flask_app.config["MCP_URL"], endpoint_path(flask_app.config["MCP_URL"])
    server = build_server()
    starlette = server.streamable_http_app(
        streamable_http_path=path,
        json_response=True,
        stateless_http=True,
        transport_security=transport_security(mcp_url, flask_app.config["ISSUER_URL"]),
        max_request_body_size=MAX_BODY_BYTES,
    )
    # The endpoint's requests go from the door to the session manager itself (its body limit
    # first); the Starlette app keeps the lifespan (which runs the manager) and every other path.
    door = Door(starlette, flask_app, path, endpoint=server.session_manager.handle_request)
    return ResourceMetadata(door, flask_app.config)
