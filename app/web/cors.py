"""Cross-origin reads for browser apps (CORS): which pages on other sites may read which answers.

A browser app (a public client: no secret, PKCE) calls the token endpoint, userinfo and `/v1` from
its own origin. Without these headers the browser sends the request (and a code is spent) but
hides the answer from the app. The rules:

- Userinfo and `/v1`: any origin (`*`). The access token in the Authorization header is the
  credential, never a cookie (`*` cannot carry cookies), so a page reads only what its own token
  allows. Preflights are answered for the Authorization header.
- Token and revocation endpoints: only the origin of one of the registered
  redirect URIs of the app that authenticated (its own pages), echoed with `Vary: Origin`. A browser app sends the
  form-encoded request with its `client_id` in the body and no Authorization header: a "simple"
  request, no preflight. No preflight is allowed here, so a page cannot send a client secret
  in a Basic header from a browser either.
- Everything else (pages, the console, introspection): no CORS headers. Discovery and the key
  set carry `*` already (app/protocol/metadata.py).

Written here rather than with Flask-Cors: its allowed origins are fixed per route, and the
token endpoint's depend on the client that calls it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask, Response, g, request

from app.core.capabilities import REVOCATION_PATH, TOKEN_PATH, USERINFO_PATH
from app.core.security import BEARER_READ_HEADERS, EXPOSED
from app.web.api.envelope import is_api_request

BEARER_METHODS = "GET, POST"
BEARER_HEADERS = "Authorization, Content-Type, x-api-key"
PREFLIGHT_MAX_AGE = "600"
DEFAULT_PORTS = {"http": 80, "https": 443}


def web_origin(uri: str) -> str | None:
    """`scheme://host[:port]` as a browser sends it in `Origin`; None for a URI no page can
    have (a native app's custom scheme)."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    suffix = f":{port}" if port is not None and port != DEFAULT_PORTS[parts.scheme] else ""
    return f"{parts.scheme}://{host}{suffix}"


def _calling_client_origins() -> set[str]:
    """The web origins of the redirect URIs of the app that authenticated at the token or
    revocation endpoint in this request (none when no app did: whatever else the request names
    is not asked)."""
    client = g.get("authenticated_client")
    if client is None or not client.is_active:
        return set()
    return {origin for uri in client.redirect_uris if (origin := web_origin(uri))}


def add_cors_headers(response: Response) -> Response:
    origin = request.headers.get("Origin")
    if not origin:
        return response
    path = request.path
    if path == USERINFO_PATH or is_api_request():
        if request.method == "OPTIONS":
            response.headers["Access-Control-Allow-Origin"] = "*"
            response.headers["Access-Control-Allow-Methods"] = BEARER_METHODS
            response.headers["Access-Control-Allow-Headers"] = BEARER_HEADERS
            response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
        else:
            for name, value in BEARER_READ_HEADERS:
                response.headers[name] = value
    elif path in (TOKEN_PATH, REVOCATION_PATH) and request.method == "POST":
        response.vary.add("Origin")
        if response.status_code < 500 and origin in _calling_client_origins():
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = EXPOSED
    return response


def init_cors(app: Flask) -> None:
    app.after_request(add_cors_headers)
