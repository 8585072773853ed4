"""The catalog reads behind the key door, as the spec shapes them: profiles by id, collaborators,
tracks and albums by their identifiers, a track's albums, album credits, search, autocomplete, the
role taxonomy and profile search - with the rules of their inputs (which identifiers are worth a
lookup, the keyword's length, the lists' sizes) and their paging.

The rows are the store's: search, autocomplete and collaborators `store().catalog`'s
(app/store/catalog.py: their SQL depends on its text index), the rest `store().catalog_reads`'
(app/store/catalog_reads.py: every lookup an indexed equality, every list a bounded page with its
count). The JSON shapes are the spec's; where the spec says "not shown" the shape is ours and is
documented in openapi.yaml."""

from __future__ import annotations

from app.models import Album, Profile, Track
from app.store import store
from app.web.api.auth import canonical_uuid
from app.web.api.envelope import page
from app.web.api.paging import PageRequest
from app.web.api.reads import credited_track_json, roles_json

TRACK_KEYS = ("id", "isrc", "spotify")
ALBUM_KEYS = ("id", "upc", "spotify")
SEARCH_TYPES = ("track", "profile", "album")
SEARCH_LIMIT = 10
AUTOCOMPLETE_LIMIT = 10
MAX_KEYWORD = 200
# Python's whitespace (str.isspace, what str.strip() removes), spelled out so that the OpenAPI
# document can carry the very same pattern and mean the same in every regex dialect (ECMA-262's
# `\s` differs from Python's): text the search accepts has a character that is neither whitespace
# nor NUL; a list parameter (`names`) has one that is not a comma either. The views check these
# patterns and openapi.yaml states them (tests/unit/test_api_contract.py holds the two together).
SPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
VISIBLE_TEXT = rf"^[^\x00]*[^\x00{SPACE}][^\x00]*$"
LISTED_TEXT = rf"^[^\x00]*[^\x00,{SPACE}][^\x00]*$"
MAX_OFFSET = 10**18 - 1  # app/web/api/paging.py reads up to 18 digits
MAX_NAMES = 20
MAX_TRACK_IDS = 50


def find_profile(profile_id: str) -> Profile | None:
    canonical = canonical_uuid(profile_id)
    return store().catalog_reads.profile(canonical) if canonical else None


def _identifier(id_value: str) -> str | None:
    """An identifier worth looking up: not empty, not longer than any stored one (a NUL never
    gets here: app/core/security.py refuses it in any path)."""
    value = (id_value or "").strip()
    return value if value and len(value) <= 64 else None


def _lookup_value(id_key: str, id_value: str) -> str | None:
    """The value to find a row by: an identifier worth looking up, and for `id` a UUID (canonical)."""
    value = _identifier(id_value)
    if value is None or id_key != "id":
        return value
    return canonical_uuid(value)


TRACK_ID_KEYS = ("id", "isrc", "spotify")  # the `idKey`s a track is found by
ALBUM_ID_KEYS = ("id", "upc", "spotify")


def find_track(id_key: str, id_value: str) -> Track | None:
    """A track by `id` (UUID), `isrc` or `spotify`; None for an unknown key or value."""
    value = _lookup_value(id_key, id_value)
    return store().catalog_reads.track_by(id_key, value) if value is not None else None


def find_album(id_key: str, id_value: str) -> Album | None:
    """An album by `id` (UUID), `upc` or `spotify`; None for an unknown key or value."""
    value = _lookup_value(id_key, id_value)
    return store().catalog_reads.album_by(id_key, value) if value is not None else None


def track_json(track: Track) -> dict:
    return {
        "id": track.id,
        "title": track.title,
        "isrcs": list(track.isrcs or []),
        "spotifyIds": [track.spotify_id] if track.spotify_id else [],
        "label": track.label,
        "popularity": track.popularity,
        "spotifyPreviewUrl": track.spotify_preview_url,
    }


def album_json(album: Album) -> dict:
    return {
        "id": album.id,
        "title": album.title,
        "upc": album.upc,
        "label": album.label,
        "releaseDate": album.release_date.isoformat(),
        "albumArt": album.album_art,
        "spotifyId": album.spotify_id,
        "popularity": album.popularity,
    }


def collaborators_page(profile_id: str, wanted: PageRequest) -> dict:
    """The profiles sharing the most tracks with `profile_id` (most shared first, ties by id)."""
    total, found = store().catalog.collaborators(profile_id, wanted.limit, wanted.offset)
    items = [{"id": c.id, "name": c.name, "avatarUrl": c.avatar_url, "sharedCredits": c.shared} for c in found]
    return page(wanted.limit, wanted.offset, total, items)


def track_albums_page(track: Track, wanted: PageRequest) -> dict:
    """The albums a track appears on (from its credits), newest release first."""
    total, albums = store().catalog_reads.track_albums(track.id, wanted.limit, wanted.offset)
    items = [
        {"id": a.id, "title": a.title, "releaseDate": a.release_date.isoformat(), "popularity": a.popularity}
        for a in albums
    ]
    return page(wanted.limit, wanted.offset, total, items)


def album_credits_page(album: Album, wanted: PageRequest) -> dict:
    """Who is credited on the album's tracks: one row per credited profile and track, with the
    roles held (ordered by track, then credit)."""
    total, credits = store().catalog_reads.album_credits(album.id, wanted.limit, wanted.offset)
    items = [
        {
            "profile": {"id": c.profile.id, "name": c.profile.name, "avatarUrl": c.profile.avatar_url},
            "credits": roles_json(c.roles),
            "track": credited_track_json(c.track),
        }
        for c in credits
    ]
    return page(wanted.limit, wanted.offset, total, items)


def roles_page() -> dict:
    """The whole taxonomy as one page: every specific role with its family (the spec's
    `/roles` declares no query parameters)."""
    items = [{"child": role.name, "parent": role.family} for role in store().catalog_reads.roles()]
    return page(len(items), 0, len(items), items)


# -- search ----------------------------------------------------------------------------------------


def _empty() -> dict:
    return {"total": 0, "items": []}


def _profile_items(profile_ids: list[str]) -> list[dict]:
    """The profile bucket's items, in the order given, with the figures computed when the catalog
    was loaded (the store's refresh_profile_stats)."""
    found = store().catalog_reads.profile_hits(profile_ids)
    return [
        {
            "id": pid,
            "name": hit.name,
            "popularity": hit.popularity,
            "creditCount": hit.credit_count,
            "collaboratorsCount": hit.collaborator_count,
            "avatarUrl": hit.avatar_url or "",
            "commonCredits": list(hit.common_roles),
        }
        for pid in profile_ids
        if (hit := found.get(pid)) is not None
    ]


def _track_items(track_ids: list[str]) -> list[dict]:
    found = store().catalog_reads.track_hits(track_ids)
    return [
        {
            "id": tid,
            "title": hit.title,
            "popularity": hit.popularity,
            "releaseDate": hit.first_release.isoformat() + "T00:00:00" if hit.first_release is not None else None,
        }
        for tid in track_ids
        if (hit := found.get(tid)) is not None
    ]


def _album_items(album_ids: list[str]) -> list[dict]:
    albums = store().catalog_reads.album_hits(album_ids)
    return [
        {
            "id": a.id,
            "title": a.title,
            "upc": a.upc,
            "releaseDate": a.release_date.isoformat(),
            "albumArt": a.album_art,
            "popularity": a.popularity,
        }
        for aid in album_ids
        if (a := albums.get(aid)) is not None
    ]


_ITEMS = {"profile": ("profiles", _profile_items), "track": ("tracks", _track_items), "album": ("albums", _album_items)}


def search(keyword: str, types: list[str]) -> dict:
    """Profiles, tracks and albums matching `keyword`, best first: the exact name, then names
    starting with it, then a word starting with it, a fragment, one typo (app/store/catalog.py);
    ties by popularity. `total` counts matches up to the store's cap. A bucket that was not asked
    for is empty, not absent."""
    result = {"tracks": _empty(), "albums": _empty(), "profiles": _empty()}
    found = store().catalog.search([kind for kind in SEARCH_TYPES if kind in types], keyword, SEARCH_LIMIT)
    for kind, hits in found.items():
        bucket, items = _ITEMS[kind]
        result[bucket] = {"total": hits.total, "items": items(hits.ids)}
    return result


def autocomplete(q: str) -> dict:
    """Type-ahead over profiles, tracks and albums: names starting with `q` (then, from two letters,
    names with a word starting with it), profiles before tracks before albums within each."""
    found = store().catalog.autocomplete(q, AUTOCOMPLETE_LIMIT)
    return {"items": [{"id": s.id, "name": s.name, "entityType": s.kind} for s in found]}


def profiles_for_tracks(names: list[str], track_ids: list[str], spotify_track_ids: list[str]) -> dict:
    """The profiles credited on the given tracks whose names match one of `names` (case-insensitive
    substring): who on this track is "Max"? Each row lists the matched tracks."""
    reads = store().catalog_reads
    tracks: set[str] = set()
    if track_ids:
        tracks |= reads.tracks_with_ids([c for c in (canonical_uuid(t) for t in track_ids) if c])
    if spotify_track_ids:
        tracks |= reads.tracks_with_spotify_ids(spotify_track_ids)
    if not tracks:
        return {"items": []}
    wanted = [n.lower() for n in names]
    found: dict[str, dict] = {}
    for on in reads.credited_on(tracks):
        if any(w in on.name.lower() for w in wanted):
            entry = found.setdefault(
                on.profile_id, {"id": on.profile_id, "name": on.name, "avatarUrl": on.avatar_url, "trackIds": []}
            )
            if on.track_id not in entry["trackIds"]:
                entry["trackIds"].append(on.track_id)
    return {"items": list(found.values())}
