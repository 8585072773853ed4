"""What the service takes from a request's path and body, and what it refuses before a view reads
it: one rule per kind of input, each in one place, so that no malformed value reaches a store.

- **Integers in a path** (`<int:...>` routes): ASCII digits of a value that fits a signed 64-bit
  integer, the widest either store holds (SQLite raises on a wider one; PostgreSQL compares it as a
  numeric). Anything else matches no route: a 404 in the caller's language, as any unknown address.
- **JSON bodies** (`request.get_json()`: Flask reads them with `app.json`): I-JSON (RFC 7493), the profile of JSON
  that every consumer reads the same way. A string with a lone surrogate (`"\\ud800"`, or the raw
  bytes of one) or a NUL, a member name given twice, `NaN`/`Infinity`, a number too large to hold
  (`1e999`, an integer past 64 bits) or nesting deeper than `MAX_JSON_DEPTH` make the body
  unreadable, exactly as malformed JSON is: the view answers its own 400, in its own envelope.
- **JSON bodies on pages**: read as no form data (the pages take forms; Flask-WTF would read a
  JSON body as one and break on anything but an object of strings): `pages_read_form_bodies_only`
  in app/protocol/adapters.py.
- **NUL bytes** in the path, the query or a form: `refuse_nul_bytes` in app/core/security.py, before
  every view (PostgreSQL cannot store NUL in text).
- **Command-line arguments** (`flask users ...`): `storable_text`, checked by every command group
  (app/cli/output.py): a byte the terminal's encoding cannot decode arrives as a lone surrogate.

Percent-encodings that are not UTF-8 need no rule of ours: werkzeug decodes them to U+FFFD, so
they arrive as ordinary (if unmatched) text."""

from __future__ import annotations

import json
import math
from typing import Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider
from werkzeug.routing import BaseConverter, Map, ValidationError

INT64_MAX = 2**63 - 1
MAX_JSON_DEPTH = 32


class Int64Converter(BaseConverter):
    """`<int:name>`: 1 to 19 ASCII digits (werkzeug's `\\d` also matches other scripts' digits),
    at most INT64_MAX; a longer run matches nothing, so Python never parses a huge number."""

    regex = r"[0-9]{1,19}"
    weight = 50
    part_isolating = True

    def __init__(self, map: Map) -> None:
        super().__init__(map)

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > INT64_MAX:
            raise ValidationError()
        return number

    def to_url(self, value: Any) -> str:
        return str(int(value))


class UnreadableJson(ValueError):
    """A JSON body outside I-JSON: the reader treats it as it treats malformed JSON."""


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise UnreadableJson(f"number out of range: {text[:20]}")
    return number


def _int64(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not -INT64_MAX - 1 <= (number := int(text)) <= INT64_MAX:
        raise UnreadableJson(f"integer out of range: {text[:20]}")
    return number


def _no_constants(name: str) -> None:
    raise UnreadableJson(f"not JSON: {name}")


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise UnreadableJson("a member name appears twice")
    return members


def storable_text(value: str) -> bool:
    """Text both stores hold: Unicode without a lone surrogate (the UTF-8 codec refuses one, in C)
    and without NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def _check_text(value: str) -> None:
    if not storable_text(value):
        raise UnreadableJson("a string holds a lone surrogate or a NUL")


def _check_values(value: Any, depth: int = 0) -> None:
    """Every string (member names included) is Unicode text a store can hold; nesting is bounded."""
    if isinstance(value, str):
        _check_text(value)
    elif isinstance(value, (dict, list)):
        if depth >= MAX_JSON_DEPTH:
            raise UnreadableJson("nested too deeply")
        for name in value if isinstance(value, dict) else ():
            _check_text(name)
        for item in value.values() if isinstance(value, dict) else value:
            _check_values(item, depth + 1)


class IJsonProvider(DefaultJSONProvider):
    """Flask's JSON provider, reading I-JSON: `loads` raises ValueError for anything else, which
    `request.get_json` turns into its failure (None when silent, else a 400). Flask reads every
    request body through it; the session cookie is read without it (SessionJSON, app/protocol/adapters.py)."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError("I-JSON is read without options")
        try:
            value = json.loads(
                s,
                parse_float=_finite,
                parse_int=_int64,
                parse_constant=_no_constants,
                object_pairs_hook=_unique_members,
            )
        except RecursionError:  # deeper than the C scanner goes: not a ValueError of its own
            raise UnreadableJson("nested too deeply") from None
        _check_values(value)
        return value


def init_input_rules(app: Flask) -> None:
    """Before any blueprint: a route's converters are looked up when the route is added."""
    from app.core.adapters import pages_read_form_bodies_only

    app.json = IJsonProvider(app)
    app.url_map.converters["int"] = Int64Converter
    pages_read_form_bodies_only()
