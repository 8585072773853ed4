"""The widget API, `/embed/v1`: read-only profile, credits and charts for browser widgets, and
the profile cards the hosted script shows (`/cards`, and a roster's: `/rosters/<id>/cards`; the
script itself: app/web/api/widget_script.py).

It takes API keys only: publishable keys (`mpk_`) from a page on one of the key's domains
(checked against `Origin`, else `Referer`), and secret keys from anywhere. The same gateway
(limits, meter, error shapes), envelope and paging as `/v1`: a request for a batch of cards is one
request, counted once on the meter like every other."""

from __future__ import annotations

from flask import Blueprint, Response, request

from app.services import rosters
from app.web.api import cards, reads
from app.web.api.envelope import INVALID_PARAMETERS, NOT_FOUND, ApiError, ok, page
from app.web.api.gateway import WIDGET, KeyCaller, door
from app.web.api.paging import PageRequest, page_request
from app.web.api.views import reached, reached_profile

bp = Blueprint("widget_api", __name__, url_prefix="/embed/v1")


@bp.get("/profile/<profile_id>")
@door(key=WIDGET)
def profile(caller: KeyCaller, profile_id: str) -> Response:
    return ok(reads.profile_json(reached(caller, profile_id)))


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
        raise ApiError(400, INVALID_PARAMETERS, param="ids")
    return ok(cards.cards(wanted))


def roster_page_request() -> PageRequest:
    """`limit` 1 to MAX_CARDS (default MAX_CARDS: a roster's cards come a batch at a time) and
    `offset`, with the paging rules of every page (app/web/api/paging.py)."""
    wanted = page_request(request.args)
    limit = wanted.limit if "limit" in request.args else cards.MAX_CARDS
    if limit > cards.MAX_CARDS:
        raise ApiError(400, INVALID_PARAMETERS, param="limit")
    return PageRequest(limit, wanted.offset)


@bp.get("/rosters/<roster_id>/cards")
@door(key=WIDGET)
def roster_cards(caller: KeyCaller, roster_id: str) -> Response:
    """A page of the cards of a roster's profiles, in the roster's order (by name), for a key of
    the roster's owner. Another member's roster, or no such roster, is 404: a roster id names
    nothing to anyone else's key."""
    wanted = roster_page_request()
    roster = rosters.widget_roster(roster_id, caller.key.owner_id)
    if roster is None:
        raise ApiError(404, NOT_FOUND)
    total, profile_ids = rosters.card_page(roster, wanted.limit, wanted.offset)
    return ok(page(wanted.limit, wanted.offset, total, cards.cards(profile_ids)))
