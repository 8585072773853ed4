"""The `/v1` routes: the member's own profile, credits and analytics. Thin - each route names
the scope it needs, asks auth.py which profile the token reaches, and returns reads.py's data."""

from __future__ import annotations

from flask import Blueprint, Response, request

from app.api import reads
from app.api.auth import Caller, own_profile_id, requires
from app.api.envelope import NOT_FOUND, ApiError, ok
from app.api.paging import page_request

bp = Blueprint("api", __name__, url_prefix="/v1")

CREDITS = "credits:read"  # the member's credits profile and credit rows
ANALYTICS = "analytics:read"  # the member's chart rows; needs the pro membership at request time


def _profile(profile_id: str) -> Response:
    profile = reads.find_profile(profile_id)
    if profile is None:
        raise ApiError(404, NOT_FOUND)
    return ok(reads.profile_json(profile))


@bp.get("/me")
@requires(CREDITS)
def me(caller: Caller) -> Response:
    return _profile(own_profile_id(caller))


@bp.get("/me/credits")
@requires(CREDITS)
def my_credits(caller: Caller) -> Response:
    return ok(reads.credit_page(own_profile_id(caller), page_request(request.args)))


@bp.get("/me/analytics")
@requires(ANALYTICS)
def my_analytics(caller: Caller) -> Response:
    return ok(reads.chart_rows(own_profile_id(caller)))


@bp.get("/profile/<profile_id>")
@requires(CREDITS)
def profile(caller: Caller, profile_id: str) -> Response:
    return _profile(own_profile_id(caller, profile_id))


@bp.get("/profile/<profile_id>/credits")
@requires(CREDITS)
def profile_credits(caller: Caller, profile_id: str) -> Response:
    return ok(reads.credit_page(own_profile_id(caller, profile_id), page_request(request.args)))


@bp.get("/profile/<profile_id>/charts")
@requires(ANALYTICS)
def profile_charts(caller: Caller, profile_id: str) -> Response:
    return ok(reads.chart_rows(own_profile_id(caller, profile_id)))
