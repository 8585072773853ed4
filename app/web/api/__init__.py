"""The `/v1` data API, with two doors on the same paths: a bearer access token from this
provider reaches the member's own profile, credits and (on pro) analytics; an API key (`x-api-key`)
reaches the whole catalog through the gateway (per-key limits, the `api_requests` meter). The
widget API `/embed/v1` serves publishable keys. One envelope, paging and headers for all. The
catalog's rows come from the store (`store().catalog`, `store().catalog_reads`): reads.py,
catalog.py and cards.py run no SQL of their own.

  auth.py      who is calling, which scope and membership the route needs, which profile it reaches
  gateway.py   the key door: key lookup, entitlement, per-plan limits, metering, gateway errors
  catalog.py   the catalog reads only keys reach (tracks, albums, search, roles, collaborators):
               their input rules, paging and JSON shapes over the store's rows
  widget.py    the widget API routes (`/embed/v1`)
  cards.py     the profile cards the widget shows (the store reads a batch in a fixed number of queries)
  widget_script.py  the hosted widget script (`/embed/v1/widget.js`), its caching and encoding
  paging.py    limit/offset rules
  envelope.py  success, page and error shapes
  limits.py    per-sign-in (and per-address) budget, RateLimit-* headers, request id
  versioning.py  `x-service-version` on every response, `@deprecated` (Deprecation, Sunset)
  reads.py     a profile, its credit pages and chart rows as JSON (both doors; the store's rows)
  views.py     the /v1 routes, each naming its doors (token, key or both)
  openapi.py   the OpenAPI 3.1 document (openapi.yaml)
"""

from __future__ import annotations

from flask import Flask, Response, request

from app.web.api.envelope import ApiError, is_api_request, render_api_error
from app.web.api.gateway import GatewayError, render_gateway_error
from app.web.api.limits import count_request, decorate_response
from app.web.api.openapi import docs
from app.web.api.views import bp
from app.web.api.widget import bp as widget_bp
from app.web.api.widget_script import bp as widget_script_bp
from app.web.api.widget_script import is_script_request


def init_api(app: Flask) -> None:
    from app.core.extensions import csrf

    for blueprint in (bp, widget_bp):
        csrf.exempt(blueprint)  # bearer tokens and API keys, no cookies: nothing for CSRF to protect
        app.register_blueprint(blueprint)
    app.register_blueprint(widget_script_bp)
    app.register_blueprint(docs)
    app.register_error_handler(ApiError, render_api_error)
    app.register_error_handler(GatewayError, render_gateway_error)

    # App-wide hooks limited to /v1 paths, so unknown /v1 paths are counted and decorated too.
    @app.before_request
    def _count_api_request() -> None:
        # A browser's CORS preflight is free, and so is the widget's script (a static file).
        if is_api_request() and request.method != "OPTIONS" and not is_script_request():
            count_request()

    @app.after_request
    def _decorate_api_response(response: Response) -> Response:
        return decorate_response(response) if is_api_request() else response
