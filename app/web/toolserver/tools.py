"""The tool server's 12 tools: the spec's names and required arguments, a description and a JSON
input schema a model can read, the checks their arguments pass, and the catalog reads that answer
them - the very functions the `/v1` routes call (app/web/api/catalog.py, app/web/api/reads.py), so a tool
call and the REST call it maps to answer the same facts in the same shapes.

A tool answers the REST operation's `data`, or raises the REST operation's `ApiError`: 400
`Invalid parameters supplied` (or `Too big page, max page size is 50`) for arguments outside the
schema, 404 `Not found` for an identifier that matches nothing. Arguments the schema does not
name are refused too: a misspelt argument name is told, not silently ignored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from werkzeug.datastructures import MultiDict

from app.models import Album, Profile, Track
from app.web.api import catalog, reads
from app.web.api.envelope import INVALID_PARAMETERS, NOT_FOUND, ApiError
from app.web.api.paging import DEFAULT_LIMIT, MAX_LIMIT, PageRequest, page_request

Arguments = Mapping[str, Any]


@dataclass(frozen=True)
class CatalogTool:
    """One tool: what a model is told about it and what answers it."""

    name: str
    title: str
    description: str
    maps_to: str  # the REST operation it answers as (docs/tools.md, the tests)
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    answer: Callable[[Arguments], Any]  # the REST `data` for valid arguments, or an ApiError

    @property
    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": self.properties, "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        return schema

    def call(self, arguments: Arguments) -> Any:
        if not set(arguments) <= set(self.properties) or not set(self.required) <= set(arguments):
            raise ApiError(400, INVALID_PARAMETERS)
        return self.answer(arguments)


# -- the arguments -----------------------------------------------------------------------------------


def _invalid() -> ApiError:
    return ApiError(400, INVALID_PARAMETERS)


def _text(value: Any) -> str:
    """A non-blank string the catalog can be asked about (trimmed): not longer than any keyword
    the API takes, no NUL (PostgreSQL refuses it in text)."""
    if not isinstance(value, str) or not value.strip() or len(value) > catalog.MAX_KEYWORD or "\x00" in value:
        raise _invalid()
    return value.strip()


def _texts(value: Any, most: int) -> list[str]:
    """A list of strings (blank ones dropped, as the REST list parameters drop them), at most `most`."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > most:
        raise _invalid()
    if not all(isinstance(v, str) and len(v) <= catalog.MAX_KEYWORD and "\x00" not in v for v in value):
        raise _invalid()
    return [v.strip() for v in value if v.strip()]


def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise _invalid()
    return value


def _page(arguments: Arguments) -> PageRequest:
    """`limit` and `offset` by the REST rules (app/web/api/paging.py): whole numbers, limit 1 to 50
    (above 50: `Too big page, max page size is 50`, never truncated), offset 0 or more."""
    given: MultiDict[str, str] = MultiDict()
    for name in ("limit", "offset"):
        value = arguments.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise _invalid()
        given[name] = str(value)
    return page_request(given)


# -- the reads ---------------------------------------------------------------------------------------


def _profile(arguments: Arguments) -> Profile:
    profile = catalog.find_profile(_text(arguments["id_value"]))
    if profile is None:
        raise ApiError(404, NOT_FOUND)
    return profile


def _track(arguments: Arguments) -> Track:
    track = catalog.find_track(_one_of(arguments["id_key"], catalog.TRACK_KEYS), _text(arguments["id_value"]))
    if track is None:
        raise ApiError(404, NOT_FOUND)
    return track


def _album(arguments: Arguments) -> Album:
    album = catalog.find_album(_one_of(arguments["id_key"], catalog.ALBUM_KEYS), _text(arguments["id_value"]))
    if album is None:
        raise ApiError(404, NOT_FOUND)
    return album


def _search(arguments: Arguments) -> dict:
    keyword = _text(arguments["keyword"])
    types = arguments.get("type")
    if types is not None and (
        not isinstance(types, list) or not all(isinstance(t, str) and t in catalog.SEARCH_TYPES for t in types)
    ):
        raise _invalid()
    return catalog.search(keyword, types or list(catalog.SEARCH_TYPES))


def _profiles_search(arguments: Arguments) -> dict:
    names = _texts(arguments.get("names"), catalog.MAX_NAMES)
    track_ids = _texts(arguments.get("track_ids"), catalog.MAX_TRACK_IDS)
    spotify_ids = _texts(arguments.get("spotify_track_ids"), catalog.MAX_TRACK_IDS)
    if not names or not (track_ids or spotify_ids):
        raise _invalid()
    return catalog.profiles_for_tracks(names, track_ids, spotify_ids)


# -- what a model is told ------------------------------------------------------------------------------

PROFILE_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": catalog.MAX_KEYWORD,
    "description": "The profile's id (a UUID), as search, search_autocomplete or a credit row gives it.",
}
LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIMIT,
    "default": DEFAULT_LIMIT,
    "description": f"Page size, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
}
OFFSET = {
    "type": "integer",
    "minimum": 0,
    "default": 0,
    "description": "Rows to skip (default 0). Page on until offset >= totalCount.",
}
PAGE = {"limit": LIMIT, "offset": OFFSET}
PAGED = " Answers a page: {limit, offset, totalCount, items}."


def _id_key(keys: tuple[str, ...], what: str) -> dict[str, Any]:
    return {
        "type": "string",
        "enum": list(keys),
        "description": f"Which identifier id_value is: {', '.join(keys)} ({what}).",
    }


TRACK_KEY = _id_key(catalog.TRACK_KEYS, "the track's UUID, an ISRC such as USRC17607839, or a Spotify track id")
ALBUM_KEY = _id_key(catalog.ALBUM_KEYS, "the album's UUID, its UPC barcode, or a Spotify album id")
ID_VALUE = {
    "type": "string",
    "minLength": 1,
    "maxLength": catalog.MAX_KEYWORD,
    "description": "The identifier's value.",
}
ID_LIST = {"type": "array", "items": {"type": "string", "maxLength": catalog.MAX_KEYWORD}}

TOOLS: tuple[CatalogTool, ...] = (
    CatalogTool(
        "search",
        "Search the catalog",
        "Search profiles (artists, writers, producers), tracks and albums whose name or title contains "
        "a keyword, most popular first. Results come grouped in three buckets, each {total, items}; "
        "a bucket not asked for comes back empty.",
        "POST /search",
        {
            "keyword": {
                "type": "string",
                "minLength": 1,
                "maxLength": catalog.MAX_KEYWORD,
                "description": "What to look for (case-insensitive; part of a name or title).",
            },
            "type": {
                "type": "array",
                "items": {"type": "string", "enum": list(catalog.SEARCH_TYPES)},
                "description": "Which buckets to fill: track, profile, album (default: all three).",
            },
        },
        ("keyword",),
        _search,
    ),
    CatalogTool(
        "search_autocomplete",
        "Suggest names as they are typed",
        "Type-ahead suggestions: profiles, tracks and albums whose name starts with q (profiles first), "
        "each {id, name, entityType}. Use it to turn a name into an id.",
        "GET /search/autocomplete",
        {
            "q": {
                "type": "string",
                "minLength": 1,
                "maxLength": catalog.MAX_KEYWORD,
                "description": "The start of a name.",
            }
        },
        ("q",),
        lambda arguments: catalog.autocomplete(_text(arguments["q"])),
    ),
    CatalogTool(
        "search_profiles",
        "Find who on a track has a name",
        "Which profiles credited on the given tracks have one of the given names (case-insensitive, part of "
        "the name): who on this track is 'Max'? Give names plus track_ids or spotify_track_ids (or both). "
        "Each row lists the matched track ids.",
        "GET /profiles/search",
        {
            "names": {**ID_LIST, "minItems": 1, "maxItems": catalog.MAX_NAMES, "description": "Names to look for."},
            "track_ids": {**ID_LIST, "maxItems": catalog.MAX_TRACK_IDS, "description": "Track ids (UUIDs)."},
            "spotify_track_ids": {**ID_LIST, "maxItems": catalog.MAX_TRACK_IDS, "description": "Spotify track ids."},
        },
        ("names",),
        _profiles_search,
    ),
    CatalogTool(
        "get_profile",
        "Get a profile",
        "A credits profile by id: name, city, country, bio, links and avatar.",
        "GET /profile/{id}",
        {"id_value": PROFILE_ID},
        ("id_value",),
        lambda arguments: reads.profile_json(_profile(arguments)),
    ),
    CatalogTool(
        "get_profile_credits",
        "List a profile's credits",
        "A profile's verified credits, newest release first: each row has the roles held (child role and "
        "its parent family), the track, the album, the release date and the track's artists." + PAGED,
        "GET /profile/{id}/credits",
        {"id_value": PROFILE_ID, **PAGE},
        ("id_value",),
        lambda arguments: reads.credit_page(_profile(arguments).id, _page(arguments)),
    ),
    CatalogTool(
        "get_profile_collaborators",
        "List a profile's collaborators",
        "The profiles that share the most tracks with a profile, most shared first, each with its "
        "sharedCredits count." + PAGED,
        "GET /profile/{id}/collaborators",
        {"id_value": PROFILE_ID, **PAGE},
        ("id_value",),
        lambda arguments: catalog.collaborators_page(_profile(arguments).id, _page(arguments)),
    ),
    CatalogTool(
        "get_profile_charts",
        "Get a profile's chart analytics",
        "A profile's chart rows under `items`: chartName, position, positionChange, score, scoreChange "
        "(absent where unknown), creditsCount and percentage.",
        "GET /profile/{id}/charts",
        {"id_value": PROFILE_ID},
        ("id_value",),
        lambda arguments: reads.chart_rows(_profile(arguments).id),
    ),
    CatalogTool(
        "get_track",
        "Get a track",
        "A track by its UUID, an ISRC or a Spotify id: title, ISRCs, Spotify ids, label, popularity and a preview URL.",
        "GET /track/{idKey}/{idValue}",
        {"id_key": TRACK_KEY, "id_value": ID_VALUE},
        ("id_key", "id_value"),
        lambda arguments: catalog.track_json(_track(arguments)),
    ),
    CatalogTool(
        "get_track_albums",
        "List the albums of a track",
        "The albums a track appears on, newest release first, each {id, title, releaseDate, popularity}." + PAGED,
        "GET /track/{idKey}/{idValue}/albums",
        {"id_key": TRACK_KEY, "id_value": ID_VALUE, **PAGE},
        ("id_key", "id_value"),
        lambda arguments: catalog.track_albums_page(_track(arguments), _page(arguments)),
    ),
    CatalogTool(
        "get_album",
        "Get an album",
        "An album by its UUID, UPC or Spotify id: title, UPC, label, release date, art and popularity.",
        "GET /album/{idKey}/{idValue}",
        {"id_key": ALBUM_KEY, "id_value": ID_VALUE},
        ("id_key", "id_value"),
        lambda arguments: catalog.album_json(_album(arguments)),
    ),
    CatalogTool(
        "get_album_credits",
        "List the credits on an album",
        "Who is credited on an album's tracks: one row per credited profile and track, with the roles held "
        "and the track." + PAGED,
        "GET /album/{idKey}/{idValue}/credits",
        {"id_key": ALBUM_KEY, "id_value": ID_VALUE, **PAGE},
        ("id_key", "id_value"),
        lambda arguments: catalog.album_credits_page(_album(arguments), _page(arguments)),
    ),
    CatalogTool(
        "get_roles",
        "List the credit roles",
        "The whole credit-role taxonomy as one page: every specific role (child) with the family it "
        "belongs to (parent).",
        "GET /roles",
        {},
        (),
        lambda arguments: catalog.roles_page(),
    ),
)

BY_NAME: dict[str, CatalogTool] = {tool.name: tool for tool in TOOLS}
