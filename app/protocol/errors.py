"""The protocol's errors as an OAuth client reads them: RFC 6749 JSON (`error`, `error_description`),
never stored by a cache. Authlib renders the protocol's own errors in the same shape; these are the
statuses no grant answers (a throttle's 429, a 404, an outage's 503), in one place for the token
endpoint at the front and for the pages' error handlers (app/web/errors.py)."""

from __future__ import annotations

from flask import Response, jsonify

OAUTH_CODES = {
    400: "invalid_request",
    404: "invalid_request",
    405: "invalid_request",
    413: "invalid_request",
    429: "slow_down",
    500: "server_error",
    503: "temporarily_unavailable",
}


def machine_error(status: int, description: str) -> Response:
    """`status` as RFC 6749 error JSON with `description` for the client's developer."""
    response = jsonify(error=OAUTH_CODES.get(status, "invalid_request"), error_description=description)
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response
