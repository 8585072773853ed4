"""The `/v1` routes. Thin - each route names its doors (`door`: a sign-in access token, an API key
or both), asks who the caller reaches, and returns the reads' data.

- `/me...`: sign-in access tokens only (the member's own data).
- `/profile/{id}`, `/credits`, `/charts`: both doors. An access token reaches only its member's
  own profile (any other id is 403, as before); an API key reaches any profile.
- Everything else (collaborators, tracks, albums, search, roles, profile search): API keys only;
  an access token is refused with 403 `insufficient_scope` - the sign-in never reaches the
  wider catalog.
- A workspace key (`mwk_`) reaches the four routes marked `roster=True` (a profile, its credits,
  charts and collaborators), for the profiles on its roster; the gateway refuses it anything else."""

from __future__ import annotations

import re

from flask import Blueprint, Response, request

from app.models import Profile
from app.web.api import catalog, reads
from app.web.api.auth import Caller, own_profile_id
from app.web.api.envelope import INVALID_PARAMETERS, NOT_FOUND, ApiError, ok
from app.web.api.gateway import KeyCaller, door
from app.web.api.paging import page_request

bp = Blueprint("api", __name__, url_prefix="/v1")

CREDITS = "credits:read"  # the member's credits profile and credit rows
ANALYTICS = "analytics:read"  # the member's chart rows; needs the pro membership at request time


def reached(caller: Caller | KeyCaller, profile_id: str | None = None) -> Profile:
    """The profile a caller may read, loaded once: any existing one with a key, its own with a
    token (`profile_id` None: the token's own) - or 404."""
    if isinstance(caller, KeyCaller):
        found = catalog.find_profile(profile_id or "")
    else:
        found = reads.find_profile(own_profile_id(caller, profile_id))
    if found is None:
        raise ApiError(404, NOT_FOUND)
    return found


def reached_profile(caller: Caller | KeyCaller, profile_id: str) -> str:
    """The id of the profile a caller may read (`reached`), for the reads that need only its id.
    A token's own profile needs no lookup: its rows are read by the id."""
    if isinstance(caller, KeyCaller):
        return reached(caller, profile_id).id
    return own_profile_id(caller, profile_id)


@bp.get("/me")
@door(CREDITS, key=None)
def me(caller: Caller) -> Response:
    return ok(reads.profile_json(reached(caller)))


@bp.get("/me/credits")
@door(CREDITS, key=None)
def my_credits(caller: Caller) -> Response:
    return ok(reads.credit_page(own_profile_id(caller), page_request(request.args)))


@bp.get("/me/analytics")
@door(ANALYTICS, key=None)
def my_analytics(caller: Caller) -> Response:
    return ok(reads.chart_rows(own_profile_id(caller)))


@bp.get("/profile/<profile_id>")
@door(CREDITS, roster=True)
def profile(caller: Caller | KeyCaller, profile_id: str) -> Response:
    return ok(reads.profile_json(reached(caller, profile_id)))


@bp.get("/profile/<profile_id>/credits")
@door(CREDITS, roster=True)
def profile_credits(caller: Caller | KeyCaller, profile_id: str) -> Response:
    return ok(reads.credit_page(reached_profile(caller, profile_id), page_request(request.args)))


@bp.get("/profile/<profile_id>/charts")
@door(ANALYTICS, roster=True)
def profile_charts(caller: Caller | KeyCaller, profile_id: str) -> Response:
    return ok(reads.chart_rows(reached_profile(caller, profile_id)))


@bp.get("/profile/<profile_id>/collaborators")
@door(roster=True)
def profile_collaborators(caller: KeyCaller, profile_id: str) -> Response:
    wanted = page_request(request.args)
    return ok(catalog.collaborators_page(reached_profile(caller, profile_id), wanted))


def _track(id_key: str, id_value: str):
    track = catalog.find_track(id_key, id_value)
    if track is None:
        raise ApiError(404, NOT_FOUND, param=None if id_key in catalog.TRACK_ID_KEYS else "idKey")
    return track


def _album(id_key: str, id_value: str):
    album = catalog.find_album(id_key, id_value)
    if album is None:
        raise ApiError(404, NOT_FOUND, param=None if id_key in catalog.ALBUM_ID_KEYS else "idKey")
    return album


@bp.get("/track/<id_key>/<id_value>")
@door()
def track(caller: KeyCaller, id_key: str, id_value: str) -> Response:
    return ok(catalog.track_json(_track(id_key, id_value)))


@bp.get("/track/<id_key>/<id_value>/albums")
@door()
def track_albums(caller: KeyCaller, id_key: str, id_value: str) -> Response:
    wanted = page_request(request.args)
    return ok(catalog.track_albums_page(_track(id_key, id_value), wanted))


@bp.get("/album/<id_key>/<id_value>")
@door()
def album(caller: KeyCaller, id_key: str, id_value: str) -> Response:
    return ok(catalog.album_json(_album(id_key, id_value)))


@bp.get("/album/<id_key>/<id_value>/credits")
@door()
def album_credits(caller: KeyCaller, id_key: str, id_value: str) -> Response:
    wanted = page_request(request.args)
    return ok(catalog.album_credits_page(_album(id_key, id_value), wanted))


@bp.post("/search")
@door()
def search(caller: KeyCaller) -> Response:
    body = request.get_json(silent=True)  # None for a body that is not I-JSON (app/core/input_rules.py)
    if not isinstance(body, dict):
        raise ApiError(400, INVALID_PARAMETERS, param="body")  # not a JSON object at all
    keyword, types = body.get("keyword"), body.get("type", list(catalog.SEARCH_TYPES))
    if not isinstance(keyword, str) or not VISIBLE.fullmatch(keyword) or len(keyword) > catalog.MAX_KEYWORD:
        raise ApiError(400, INVALID_PARAMETERS, param="keyword")
    if not isinstance(types, list) or not all(isinstance(t, str) and t in catalog.SEARCH_TYPES for t in types):
        raise ApiError(400, INVALID_PARAMETERS, param="type")
    return ok(catalog.search(keyword.strip(), types or list(catalog.SEARCH_TYPES)))


@bp.get("/search/autocomplete")
@door()
def autocomplete(caller: KeyCaller) -> Response:
    values = request.args.getlist("q")
    if len(values) != 1 or not VISIBLE.fullmatch(values[0]) or len(values[0]) > catalog.MAX_KEYWORD:
        raise ApiError(400, INVALID_PARAMETERS, param="q")
    return ok(catalog.autocomplete(values[0].strip()))


@bp.get("/roles")
@door()
def roles(caller: KeyCaller) -> Response:
    return ok(catalog.roles_page())


# The patterns openapi.yaml states for these inputs (app/web/api/catalog.py says why spelled out).
VISIBLE = re.compile(catalog.VISIBLE_TEXT)


def _list_arg(name: str, most: int) -> list[str]:
    """A list parameter, repeated (`?names=a&names=b`) or comma-separated (`?names=a,b`)."""
    values = [v.strip() for raw in request.args.getlist(name) for v in raw.split(",") if v.strip()]
    if len(values) > most or any(len(v) > catalog.MAX_KEYWORD for v in values):
        raise ApiError(400, INVALID_PARAMETERS, param=name)
    return values


@bp.get("/profiles/search")
@door()
def profiles_search(caller: KeyCaller) -> Response:
    names = _list_arg("names", catalog.MAX_NAMES)
    track_ids = _list_arg("track_ids", catalog.MAX_TRACK_IDS)
    spotify_ids = _list_arg("spotify_track_ids", catalog.MAX_TRACK_IDS)
    if not names:
        raise ApiError(400, INVALID_PARAMETERS, param="names")
    if not (track_ids or spotify_ids):
        raise ApiError(400, INVALID_PARAMETERS, param="track_ids")  # or spotify_track_ids: one of them
    return ok(catalog.profiles_for_tracks(names, track_ids, spotify_ids))
