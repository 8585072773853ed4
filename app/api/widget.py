"""The widget API, `/embed/v1`: read-only profile, credits and charts for browser widgets.

It takes API keys only: publishable keys (`mpk_`) from a page on one of the key's domains
(checked against `Origin`, else `Referer`), and secret keys from anywhere. The same gateway
(limits, meter, error shapes), envelope and paging as `/v1`."""

from __future__ import annotations

from flask import Blueprint, Response, request

from app.api import reads
from app.api.envelope import ok
from app.api.gateway import WIDGET, KeyCaller, door
from app.api.paging import page_request
from app.api.views import reached_profile

bp = Blueprint("widget_api", __name__, url_prefix="/embed/v1")


@bp.get("/profile/<profile_id>")
@door(key=WIDGET)
def profile(caller: KeyCaller, profile_id: str) -> Response:
    return ok(reads.profile_json(reads.find_profile(reached_profile(caller, profile_id))))


@bp.get("/profile/<profile_id>/credits")
@door(key=WIDGET)
def profile_credits(caller: KeyCaller, profile_id: str) -> Response:
    return ok(reads.credit_page(reached_profile(caller, profile_id), page_request(request.args)))


@bp.get("/profile/<profile_id>/charts")
@door(key=WIDGET)
def profile_charts(caller: KeyCaller, profile_id: str) -> Response:
    return ok(reads.chart_rows(reached_profile(caller, profile_id)))
