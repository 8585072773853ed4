"""The `/v1` data API: a member's own profile, credits and (on pro) analytics, reached with a
bearer access token from this provider, in the platform's envelope, paging and limits.

  auth.py      who is calling, which scope and membership the route needs, which profile it reaches
  paging.py    limit/offset rules
  envelope.py  success, page and error shapes
  limits.py    per-sign-in budget, RateLimit-* headers, request id, version header
  reads.py     the catalog queries (a bounded number per page) and JSON shapes
  views.py     the routes
  openapi.py   the OpenAPI 3.1 document (openapi.yaml)
"""

from __future__ import annotations

from flask import Flask, Response, request

from app.api.envelope import ApiError, is_api_request, render_api_error
from app.api.limits import count_request, decorate_response
from app.api.openapi import docs
from app.api.views import bp


def init_api(app: Flask) -> None:
    from app.extensions import csrf

    csrf.exempt(bp)  # bearer tokens, no cookies: nothing for CSRF to protect
    app.register_blueprint(bp)
    app.register_blueprint(docs)
    app.register_error_handler(ApiError, render_api_error)

    # App-wide hooks limited to /v1 paths, so unknown /v1 paths are counted and decorated too.
    @app.before_request
    def _count_api_request() -> None:
        if is_api_request() and request.method != "OPTIONS":  # a browser's CORS preflight is free
            count_request()

    @app.after_request
    def _decorate_api_response(response: Response) -> Response:
        return decorate_response(response) if is_api_request() else response
