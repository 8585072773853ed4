"""Security headers and proxy trust, in one place.

Every HTML page is unframeable and runs no inline script (strict CSP); sign-in, consent and
token responses are never cached; HSTS when the issuer is https."""

from __future__ import annotations

from flask import Flask, Response, request
from werkzeug.middleware.proxy_fix import ProxyFix

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; "
    "form-action 'self' http: https:; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
NO_STORE_PREFIXES = ("/login", "/consent", "/logout", "/account", "/console", "/signed-in", "/api/auth/oauth2/")


def apply_security_headers(response: Response, https: bool) -> Response:
    headers = response.headers
    headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.mimetype == "text/html":
        headers.setdefault("Content-Security-Policy", CSP)
        headers.setdefault("X-Frame-Options", "DENY")
        headers.setdefault("Referrer-Policy", "no-referrer")
    if request.path.startswith(NO_STORE_PREFIXES):
        headers["Cache-Control"] = "no-store"
        headers.setdefault("Pragma", "no-cache")
    if https:
        headers.setdefault("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
    return response


def init_security(app: Flask) -> None:
    hops = int(app.config.get("TRUSTED_PROXY_HOPS", 0))
    if hops > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops, x_port=hops, x_prefix=hops)
    https = app.config["ISSUER_URL"].startswith("https://")
    app.after_request(lambda response: apply_security_headers(response, https))
