"""The widget API, `/embed/v1`: read-only profile, credits and charts for browser widgets, and
the profile cards the hosted script shows (`/cards`; the script itself: app/web/api/widget_script.py).

It takes API keys only: publishable keys (`mpk_`) from a page on one of the key's domains
(checked against `Origin`, else `Referer`), and secret keys from anywhere. The same gateway
(limits, meter, error shapes), envelope and paging as `/v1`: a request for a batch of cards is one
request, counted once on the meter like every other."""

from __future__ import annotations

from flask import Blueprint, Response, request

from app.web.api import cards, reads
from app.web.api.envelope import INVALID_PARAMETERS, ApiError, ok
from app.web.api.gateway import WIDGET, KeyCaller, door
from app.web.api.paging import page_request
from app.web.api.views import reached_profile

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


@bp.get("/cards")
@door(key=WIDGET)
def profile_cards(caller: KeyCaller) -> Response:
    """`?ids=<id>,<id>...` (1 to 24): the cards of those that exist, in the order asked; an id
    that names no profile is left out (a roster renders the rest)."""
    raw = request.args.getlist("ids")
    wanted = cards.wanted_ids(raw[0]) if len(raw) == 1 else None
    if wanted is None:
        raise ApiError(400, INVALID_PARAMETERS)
    return ok(cards.cards(wanted))
