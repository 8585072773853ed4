"""Errors, answered in the caller's language. One renderer per kind of caller:

- people (every page): `error_page`, the HTML page;
- OAuth clients (the protocol's machine endpoints): `machine_error`, RFC 6749 JSON (`error`,
  `error_description`); Authlib renders the protocol's own errors in the same shape;
- the /v1 data API and the widget: the envelope's `status_error` (app/web/api/envelope.py);
- API-key callers of the catalog, refused at the door: the gateway's `{message, request_id}`
  (app/web/api/gateway.py).

`for_caller` picks among the first three for the errors no view answered itself (404, 405, 429,
a database outage, a crash), so each status reads the same wherever it happens. Nothing internal
(stack traces, SQL, secrets) ever reaches a response."""

from __future__ import annotations

import logging

from authlib.oauth2.rfc6749 import OAuth2Error
from flask import Flask, Response, g, jsonify, make_response, render_template, request
from flask_limiter import RateLimitExceeded
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import DataError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from werkzeug.exceptions import BadRequest, HTTPException

from app.protocol.errors import machine_error
from app.protocol.untrusted import UntrustedRequest
from app.web.api.envelope import is_api_request, status_error

log = logging.getLogger(__name__)

MACHINE_PREFIXES = (
    "/api/auth/oauth2/token",
    "/api/auth/oauth2/userinfo",
    "/api/auth/oauth2/revoke",
    "/api/auth/oauth2/introspect",
    "/api/auth/oauth2/register",
    "/api/auth/jwks",
    "/.well-known/",
)
FRIENDLY = {
    400: ("Bad request", "The request could not be understood."),
    403: ("Not allowed", "You do not have access to this page."),
    404: ("Page not found", "There is nothing at this address."),
    405: ("Method not allowed", "This address does not accept that kind of request."),
    413: ("Request too large", "The request was larger than this service accepts."),
    429: ("Too many attempts", "Too many attempts. Wait a moment and try again."),
    500: ("Something went wrong", "An unexpected error happened on our side. Please try again."),
    503: ("Temporarily unavailable", "The sign-in service is temporarily unavailable. Please try again shortly."),
}
# What an OAuth client's developer reads, where it says more than the page's plain words.
OAUTH_DESCRIPTIONS = {
    429: "Too many requests. Retry later.",
    503: "The service is temporarily unavailable. Retry shortly.",
}


def is_machine_request() -> bool:
    return request.path.startswith(MACHINE_PREFIXES)


def error_page(
    title: str,
    message: str,
    status: int,
    hint: str | None = None,
    *,
    app_name: str | None = None,
    redirect_uri: str | None = None,
    client_id: str | None = None,
    developer_hint: str | None = None,
    next_step: str | None = None,
    links: list[tuple[str, str]] | None = None,
) -> tuple[str, int]:
    """The error page: what went wrong, the app and the refused redirect URI when known, what to
    do (`next_step` replaces the status's general advice when the page knows better), and
    `links` (label, path) to where the member can go instead."""
    return render_template(
        "errors/error.html",
        title=title,
        message=message,
        status=status,
        hint=hint,
        app_name=app_name,
        redirect_uri=redirect_uri,
        client_id=client_id,
        developer_hint=developer_hint,
        next_step=next_step,
        links=links or [],
        request_id=g.get("request_id"),
    ), status


def _ways_on(error: UntrustedRequest) -> list[tuple[str, str]]:
    """The buttons of a sign-in error page: start the same request again, when it can be
    rebuilt; the app's homepage, when it has one."""
    links = []
    if error.restart:
        links.append(("Start again", error.restart))
    if error.homepage:
        links.append((f"Go to {error.app_name or 'the application'}", error.homepage))
    return links


def _untrusted_next_step(error) -> str | None:
    if error.restart:
        return "Start again to sign in to " + (error.app_name or "the application") + ": nothing was shared yet."
    if error.homepage:
        return f"Go back to {error.app_name or 'the application'} and sign in from there again."
    if error.status == 403 and error.app_name:
        return f"Go back to {error.app_name} later, or ask its team when it will be available again."
    if error.redirect_uri is not None or error.developer_hint:
        return (
            f"Go back to {error.app_name or 'the application'} and tell its team: nothing was shared, and you "
            "can try again once they have fixed it."
        )
    return None


def for_caller(status: int, message: str | None = None, hint: str | None = None, title: str | None = None) -> Response:
    """The error `status` in the caller's language: the /v1 envelope, OAuth JSON, or the page.
    `message` (and `title`) replace the status's plain words for OAuth clients and people alike."""
    title, friendly = FRIENDLY.get(status, (title or "Error", "The request could not be completed."))
    if is_api_request():
        return status_error(status)
    if is_machine_request():
        return machine_error(status, message or OAUTH_DESCRIPTIONS.get(status, friendly))
    return make_response(error_page(title, message or friendly, status, hint=hint))


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(UntrustedRequest)
    def untrusted(error: UntrustedRequest):
        return error_page(
            error.title,
            error.message,
            error.status,
            hint=error.hint,
            app_name=error.app_name,
            redirect_uri=error.redirect_uri,
            client_id=error.client_id,
            developer_hint=error.developer_hint,
            next_step=_untrusted_next_step(error),
            links=_ways_on(error),
        )

    @app.errorhandler(CSRFError)
    def csrf_failed(error: CSRFError):
        return error_page(
            "Form expired",
            "This form has expired or was not sent by this site. Go back, reload the page and try again.",
            400,
        )

    @app.errorhandler(OAuth2Error)
    def oauth_error(error: OAuth2Error):
        status, body, headers = error()
        return Response(jsonify(body).get_data(), status=status, headers=headers)

    @app.errorhandler(RateLimitExceeded)
    def rate_limited(error: RateLimitExceeded):
        """A limit's own breach response (the login page, the token endpoint's JSON) wins over
        the generic answer; limits without one get the caller's 429."""
        if error.response is not None:
            return error.response
        return for_caller(429)

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        status = error.code or 500
        if status in FRIENDLY:
            response = for_caller(status)
        else:
            response = for_caller(status, error.description or "", title=error.name)
        allow = dict(error.get_headers()).get("Allow")
        if allow:  # a 405 names the methods the resource has (RFC 9110 15.5.6)
            response.headers["Allow"] = allow
        return response

    @app.errorhandler(DataError)
    def unstorable_input(error: DataError):
        """Input the database refuses to hold (PostgreSQL rejects NUL in text, over-long values):
        the request was bad, so a 400 - the transaction is rolled back, nothing is written."""
        from app.core.extensions import db

        db.session.rollback()
        log.warning("input refused by the database on %s %s", request.method, request.path)
        return http_error(BadRequest())

    @app.errorhandler(OperationalError)
    @app.errorhandler(InterfaceError)
    @app.errorhandler(PoolTimeoutError)
    def database_unavailable(error: Exception):
        """The database is down or unreachable: a retryable 503, never a 500. Whatever the
        request was writing was in one uncommitted transaction, so nothing is half-issued."""
        reason = str(getattr(error, "orig", None) or type(error).__name__).splitlines()[0][:300]
        log.error("database unavailable on %s %s: %s", request.method, request.path, reason)
        response = for_caller(503, hint="Nothing was changed. Try again in a moment.")
        response.headers["Retry-After"] = "5"
        return response

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        log.exception("unhandled error on %s %s", request.method, request.path)
        return for_caller(500)
