"""The platform's response shapes, in one place: the success envelope, the page, and the error
envelope every `/v1` failure is rendered in (auth, reach, paging, limits, routing, crashes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Response, jsonify, request

API_PREFIX = "/v1"

# Messages fixed by the platform spec.
NOT_FOUND = "Not found"
INVALID_PARAMETERS = "Invalid parameters supplied"
TOO_BIG_PAGE = "Too big page, max page size is 50"

STATUS_MESSAGES = {
    400: INVALID_PARAMETERS,
    404: NOT_FOUND,
    405: "Method not allowed",
    413: "Request too large",
    429: "Too many requests",
    500: "Internal error",
    503: "Service temporarily unavailable",
}


class ApiError(Exception):
    """A refusal, rendered as `{result: "error", code, message}` with any protocol headers
    (RFC 6750 `WWW-Authenticate`, `Retry-After`). `param` names the offending input when there is
    one (`limit`, `q`, `keyword`, `idKey`...): the spec fixes the messages, so which field is wrong
    travels beside them, in an extra member of the envelope, never in the message."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.param = param


WIDGET_PREFIX = "/embed/v1"  # the widget API (publishable keys): the same envelope and headers


def is_api_request() -> bool:
    path = request.path
    return any(path == prefix or path.startswith(prefix + "/") for prefix in (API_PREFIX, WIDGET_PREFIX))


def ok(data: Any) -> Response:
    return jsonify({"result": "ok", "code": 200, "data": data})


def page(limit: int, offset: int, total: int, items: list) -> dict:
    return {"limit": limit, "offset": offset, "totalCount": total, "items": items}


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None, param: str | None = None
) -> Response:
    body: dict[str, Any] = {"result": "error", "code": status, "message": message}
    if param is not None:
        body["param"] = param
    response = jsonify(body)
    response.status_code = status
    response.headers.update(headers or {})
    return response


def render_api_error(error: ApiError) -> Response:
    return error_response(error.status, error.message, error.headers, error.param)


def status_error(status: int) -> Response:
    """A `/v1` failure that happened outside our views (unknown path, wrong method, a crash)."""
    return error_response(status, STATUS_MESSAGES.get(status, "Request failed"))


@dataclass(frozen=True)
class Window:
    limit: int
    remaining: int
    reset: int  # seconds until the window refills
    # A budget with a daily cap besides (workspace keys): the day's cap and what is left of it.
    day_limit: int | None = None
    day_remaining: int | None = None

    def headers(self) -> dict[str, str]:
        headers = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
            "X-RateLimit-Limit-Minute": str(self.limit),
            "X-RateLimit-Remaining-Minute": str(self.remaining),
        }
        if self.day_limit is not None:
            headers["X-RateLimit-Limit-Day"] = str(self.day_limit)
            headers["X-RateLimit-Remaining-Day"] = str(self.day_remaining)
        return headers
