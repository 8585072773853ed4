"""Offset paging as the platform spec fixes it: `limit` 1..50 (default 20), `offset` >= 0
(default 0), above 50 is refused (never truncated), a `cursor` is ignored."""

from __future__ import annotations

import re
from dataclasses import dataclass

from werkzeug.datastructures import MultiDict

from app.web.api.envelope import INVALID_PARAMETERS, TOO_BIG_PAGE, ApiError

DEFAULT_LIMIT = 20
MAX_LIMIT = 50
# ASCII digits only (Python's int() also reads other scripts' digits and "+5", " 5", "5_0").
# 18 digits keep every accepted number inside a signed 64-bit integer.
DIGITS = re.compile(r"[0-9]{1,18}")
LONG_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class PageRequest:
    limit: int
    offset: int


def _single(args: MultiDict, name: str) -> str | None:
    values = args.getlist(name)
    if len(values) > 1:
        raise ApiError(400, INVALID_PARAMETERS, param=name)  # `?limit=5&limit=50`: which one? Neither.
    return values[0] if values else None


def page_request(args: MultiDict) -> PageRequest:
    """Read `limit` and `offset` from the query string, or refuse with the spec's messages."""
    raw_limit, raw_offset = _single(args, "limit"), _single(args, "offset")
    limit = DEFAULT_LIMIT
    if raw_limit is not None:
        if not DIGITS.fullmatch(raw_limit):
            # A longer run of digits is still a number, just far above the maximum.
            message = TOO_BIG_PAGE if LONG_DIGITS.fullmatch(raw_limit) else INVALID_PARAMETERS
            raise ApiError(400, message, param="limit")
        limit = int(raw_limit)
        if limit < 1:
            raise ApiError(400, INVALID_PARAMETERS, param="limit")
        if limit > MAX_LIMIT:
            raise ApiError(400, TOO_BIG_PAGE, param="limit")
    offset = 0
    if raw_offset is not None:
        if not DIGITS.fullmatch(raw_offset):
            raise ApiError(400, INVALID_PARAMETERS, param="offset")
        offset = int(raw_offset)
    return PageRequest(limit, offset)
