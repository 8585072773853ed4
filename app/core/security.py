"""Security headers, proxy trust and log hygiene, in one place.

Every HTML page is unframeable and runs no inline script (strict CSP); sign-in, consent and
token responses are never cached; HSTS when the issuer is https. Behind reverse proxies, only
the configured number of hops may set the client IP, scheme and host (ProxyFix)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from flask import Flask, Response, abort, g, request
from werkzeug.datastructures import Headers
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.wrappers import Request

CSP_DIRECTIVES = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "
    "frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
# Browsers apply form-action to the redirects a form submission leads to (consent -> the app's
# redirect_uri), so web apps' origins must be allowed; native apps' private-use schemes are
# added per page by `allow_form_redirect`.
FORM_ACTION = "form-action 'self' http: https:"
CSP = f"{CSP_DIRECTIVES}; {FORM_ACTION}"
NO_STORE_PREFIXES = (
    "/login",
    "/consent",
    "/logout",
    "/account",
    "/console",
    "/signed-in",
    "/api/auth/oauth2/",
    "/password/",
    "/email/",
    "/invitation",
)
HSTS = "max-age=31536000; includeSubDomains"
# Authlib logs every issued token (access, refresh, ID token) at DEBUG ("Issue token %r").
QUIET_LOGGERS = ("authlib",)

# Response headers a cross-origin page may read beyond the always-readable few (Fetch standard).
EXPOSED = ", ".join(
    [
        "WWW-Authenticate",
        "Retry-After",
        "X-Request-Id",
        "X-Gateway-Request-Id",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
        "X-RateLimit-Limit-Minute",
        "X-RateLimit-Remaining-Minute",
        "x-service-version",
        "Deprecation",
        "Sunset",
    ]
)
# What a bearer-token answer (userinfo, /v1) carries for a page of any origin (not a preflight).
BEARER_READ_HEADERS = [("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", EXPOSED)]


def allow_form_redirect(uri: str | None) -> None:
    """Let the form on this page lead to `uri` (e.g. a native app's `com.example.app:/cb`)."""
    scheme = urlsplit(uri or "").scheme.lower()
    if scheme and scheme not in ("http", "https") and scheme.replace(".", "").replace("-", "").isalnum():
        g.setdefault("csp_form_schemes", set()).add(f"{scheme}:")


def content_security_policy() -> str:
    extra = sorted(g.get("csp_form_schemes", ()))
    return f"{CSP} {' '.join(extra)}" if extra else CSP


def baseline_headers(https: bool) -> list[tuple[str, str]]:
    """What every response carries, whatever its type."""
    return [("X-Content-Type-Options", "nosniff")] + ([("Strict-Transport-Security", HSTS)] if https else [])


def apply_security_headers(response: Response, https: bool) -> Response:
    wanted = baseline_headers(https)
    if response.mimetype == "text/html":
        wanted += [
            ("Content-Security-Policy", content_security_policy()),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "no-referrer"),
        ]
    add_missing(response.headers, wanted)
    no_store_under(request.path, response.headers)
    return response


def add_missing(headers: Headers, wanted: list[tuple[str, str]]) -> None:
    """Each of `wanted` added unless the response set its own. The names present are read once:
    werkzeug's `Headers.setdefault` scans the list and builds an HTTP error inside for every header
    it then adds, five of them on every page."""
    present = {name.lower() for name, _ in headers.items()}
    for name, value in wanted:
        if name.lower() not in present:
            headers.add(name, value)


def no_store_under(path: str, headers: Headers) -> None:
    """Pages and protocol answers that carry personal data or credentials are never cached."""
    if path.startswith(NO_STORE_PREFIXES):
        headers["Cache-Control"] = "no-store"
        add_missing(headers, [("Pragma", "no-cache")])


def holds_nul_bytes(req: Request) -> bool:
    """Whether the request's path or a parameter holds a NUL byte (PostgreSQL cannot store NUL in
    text, and no identifier, code or token contains one)."""
    values = req.values
    return "\x00" in req.path or any(
        "\x00" in key or "\x00" in value for key in values for value in values.getlist(key)
    )


def refuse_nul_bytes() -> None:
    """No parameter of this service may hold a NUL byte: refuse it before any route reads it."""
    if holds_nul_bytes(request):
        abort(400)


def init_security(app: Flask) -> None:
    hops = int(app.config.get("TRUSTED_PROXY_HOPS", 0))
    if hops > 0:
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops, x_port=hops, x_prefix=hops
        )
    https = app.config["ISSUER_URL"].startswith("https://")
    app.before_request(refuse_nul_bytes)
    app.after_request(lambda response: apply_security_headers(response, https))
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.INFO:  # NOTSET (inherit) or DEBUG: whatever the root level is
            logger.setLevel(logging.INFO)
