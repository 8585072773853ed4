"""The API's version and deprecation headers (spec, "Versioning"), for both doors (`/v1`, `/embed/v1`).

- `x-service-version`: the date of the contract this service implements, on every response under
  either prefix - success, API error, gateway refusal, routing error (404, 405), preflight or
  crash alike. It is set by the API's after-request hook (app/web/api/__init__.py), which Flask runs
  for the error handlers' answers too; nothing under these prefixes is answered before Flask
  (the WSGI front answers sign-in paths only).
- `@deprecated(sunset=...)` marks a route: every answer it gives (success or refusal) carries
  `Deprecation: true` and `Sunset: <HTTP date>` (RFC 8594), the moment the route goes away. The
  route keeps working until it is deleted; the headers tell clients ahead of time. The mark sits
  on the view function, so it follows the route whatever order the decorators are in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import TypeVar

from flask import Response, current_app, request
from werkzeug.http import http_date

# The date of the contract this service implements (spec: `x-service-version`, a date).
SERVICE_VERSION = "2026-11-23"
VERSION_HEADER = "x-service-version"

View = TypeVar("View", bound=Callable)


@dataclass(frozen=True)
class Deprecation:
    """A route on its way out, and when it goes (an aware UTC moment)."""

    sunset: datetime

    def headers(self) -> dict[str, str]:
        return {"Deprecation": "true", "Sunset": http_date(self.sunset)}


def _moment(sunset: date | datetime) -> datetime:
    if isinstance(sunset, datetime):
        if sunset.tzinfo is None:
            raise ValueError("a sunset must say its time zone (datetime(..., tzinfo=UTC)), or be a date")
        return sunset.astimezone(UTC)
    return datetime.combine(sunset, time(0, 0), tzinfo=UTC)  # a date: its start, in UTC


def deprecated(sunset: date | datetime) -> Callable[[View], View]:
    """Route decorator: this route is deprecated and is removed at `sunset` (a date means 00:00 UTC)."""
    mark = Deprecation(_moment(sunset))

    def decorate(view: View) -> View:
        view.deprecation = mark  # type: ignore[attr-defined]  # read by version_headers
        return view

    return decorate


def route_deprecation() -> Deprecation | None:
    """The deprecation of the route this request matched, if it has one (none for a path or
    method no route serves: no route answered)."""
    rule = request.url_rule
    view = current_app.view_functions.get(rule.endpoint) if rule is not None else None
    return getattr(view, "deprecation", None)


def add_version_headers(response: Response) -> Response:
    response.headers[VERSION_HEADER] = SERVICE_VERSION
    deprecation = route_deprecation()
    if deprecation is not None:
        response.headers.update(deprecation.headers())
    return response
