"""The catalog reads behind the key door: profiles by id, collaborators, tracks and albums by
their identifiers, album credits, search, autocomplete, the role taxonomy and profile search.

Every lookup is an indexed equality (ids, `track_isrcs`, spotify ids, UPC); every list is a
bounded page with its count. Search, autocomplete and collaborators are the store's
(`store().catalog`, app/store/catalog.py): their SQL depends on its text index.
The JSON shapes are the spec's; where the spec says "not shown" the shape is ours and is
documented in openapi.yaml."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from app.core.extensions import db
from app.models import Album, Credit, CreditRole, Profile, Track, TrackArtist, TrackIsrc
from app.store import store
from app.web.api.auth import canonical_uuid
from app.web.api.envelope import page
from app.web.api.paging import PageRequest
from app.web.api.reads import roles_of

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
    return db.session.get(Profile, canonical) if canonical else None


def _identifier(id_value: str) -> str | None:
    """An identifier worth looking up: not empty, not longer than any stored one (a NUL never
    gets here: app/core/security.py refuses it in any path)."""
    value = (id_value or "").strip()
    return value if value and len(value) <= 64 else None


TRACK_ID_KEYS = ("id", "isrc", "spotify")  # the `idKey`s a track is found by
ALBUM_ID_KEYS = ("id", "upc", "spotify")


def find_track(id_key: str, id_value: str) -> Track | None:
    """A track by `id` (UUID), `isrc` or `spotify`; None for an unknown key or value."""
    value = _identifier(id_value)
    if value is None:
        return None
    if id_key == "id":
        canonical = canonical_uuid(value)
        return db.session.get(Track, canonical) if canonical else None
    if id_key == "isrc":
        track_id = db.session.scalar(
            select(TrackIsrc.track_id)
            .where(TrackIsrc.isrc == value.upper().replace("-", ""))
            .order_by(TrackIsrc.track_id)
            .limit(1)
        )
        return db.session.get(Track, track_id) if track_id else None
    if id_key == "spotify":
        return db.session.scalar(select(Track).where(Track.spotify_id == value).order_by(Track.id).limit(1))
    return None


def find_album(id_key: str, id_value: str) -> Album | None:
    """An album by `id` (UUID), `upc` or `spotify`; None for an unknown key or value."""
    value = _identifier(id_value)
    if value is None:
        return None
    if id_key == "id":
        canonical = canonical_uuid(value)
        return db.session.get(Album, canonical) if canonical else None
    column = {"upc": Album.upc, "spotify": Album.spotify_id}.get(id_key)
    if column is None:
        return None
    return db.session.scalar(select(Album).where(column == value).order_by(Album.id).limit(1))


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
    album_ids = select(Credit.album_id).where(Credit.track_id == track.id).scalar_subquery()
    total = db.session.scalar(select(func.count()).select_from(Album).where(Album.id.in_(album_ids)))
    if wanted.offset >= total:
        return page(wanted.limit, wanted.offset, total, [])
    rows = db.session.scalars(
        select(Album)
        .where(Album.id.in_(album_ids))
        .order_by(Album.release_date.desc(), Album.id)
        .limit(wanted.limit)
        .offset(wanted.offset)
    ).all()
    items = [
        {"id": a.id, "title": a.title, "releaseDate": a.release_date.isoformat(), "popularity": a.popularity}
        for a in rows
    ]
    return page(wanted.limit, wanted.offset, total, items)


def album_credits_page(album: Album, wanted: PageRequest) -> dict:
    """Who is credited on the album's tracks: one row per credited profile and track, with the
    roles held (ordered by track, then credit)."""
    total = db.session.scalar(select(func.count()).select_from(Credit).where(Credit.album_id == album.id))
    if wanted.offset >= total:
        return page(wanted.limit, wanted.offset, total, [])
    rows = db.session.execute(
        select(
            Credit.id,
            Profile.id,
            Profile.name,
            Profile.avatar_url,
            Track.id,
            Track.title,
            Track.popularity,
            Track.isrcs,
            Track.spotify_id,
            Track.spotify_preview_url,
        )
        .join(Profile, Profile.id == Credit.profile_id)
        .join(Track, Track.id == Credit.track_id)
        .where(Credit.album_id == album.id)
        .order_by(Track.id, Credit.id)
        .limit(wanted.limit)
        .offset(wanted.offset)
    ).all()
    roles = roles_of([row[0] for row in rows])
    items = [
        {
            "profile": {"id": pid, "name": name, "avatarUrl": avatar},
            "credits": roles.get(credit_id, []),
            "track": {
                "id": tid,
                "title": title,
                "popularity": popularity,
                "isrcs": list(isrcs or []),
                "spotifyId": spotify_id,
                "spotifyPreviewUrl": preview,
            },
        }
        for credit_id, pid, name, avatar, tid, title, popularity, isrcs, spotify_id, preview in rows
    ]
    return page(wanted.limit, wanted.offset, total, items)


def roles_page() -> dict:
    """The whole taxonomy as one page: every specific role with its family (the spec's
    `/roles` declares no query parameters)."""
    family = aliased(CreditRole)
    rows = db.session.execute(
        select(CreditRole.name, family.name)
        .join(family, family.id == CreditRole.parent_id)
        .order_by(family.id, CreditRole.id)
    ).all()
    items = [{"child": child, "parent": parent} for child, parent in rows]
    return page(len(items), 0, len(items), items)


# -- search ----------------------------------------------------------------------------------------


def _empty() -> dict:
    return {"total": 0, "items": []}


def _profile_items(profile_ids: list[str]) -> list[dict]:
    """The profile bucket's items, in the order given: the figures were computed when the catalog
    was loaded (the store's refresh_profile_stats), so a prolific profile costs no more than any."""
    if not profile_ids:
        return []
    rows = {
        row.id: row
        for row in db.session.execute(
            select(
                Profile.id,
                Profile.name,
                Profile.avatar_url,
                Profile.popularity,
                Profile.credit_count,
                Profile.collaborator_count,
                Profile.common_roles,
            ).where(Profile.id.in_(profile_ids))
        )
    }
    return [
        {
            "id": pid,
            "name": row.name,
            "popularity": row.popularity,
            "creditCount": row.credit_count,
            "collaboratorsCount": row.collaborator_count,
            "avatarUrl": row.avatar_url or "",
            "commonCredits": list(row.common_roles or []),
        }
        for pid in profile_ids
        if (row := rows.get(pid)) is not None
    ]


def _track_items(track_ids: list[str]) -> list[dict]:
    if not track_ids:
        return []
    rows = {
        row.id: row
        for row in db.session.execute(select(Track.id, Track.title, Track.popularity).where(Track.id.in_(track_ids)))
    }
    released = dict(
        db.session.execute(
            select(Credit.track_id, func.min(Credit.release_date))
            .where(Credit.track_id.in_(track_ids))
            .group_by(Credit.track_id)
        ).all()
    )
    return [
        {
            "id": tid,
            "title": row.title,
            "popularity": row.popularity,
            "releaseDate": released[tid].isoformat() + "T00:00:00" if tid in released else None,
        }
        for tid in track_ids
        if (row := rows.get(tid)) is not None
    ]


def _album_items(album_ids: list[str]) -> list[dict]:
    if not album_ids:
        return []
    albums = {a.id: a for a in db.session.scalars(select(Album).where(Album.id.in_(album_ids)))}
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
    for kind in SEARCH_TYPES:
        if kind in types:
            bucket, items = _ITEMS[kind]
            hits = store().catalog.search(kind, keyword, SEARCH_LIMIT)
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
    tracks = set()
    if track_ids:
        canonical = [c for c in (canonical_uuid(t) for t in track_ids) if c]
        tracks |= set(db.session.scalars(select(Track.id).where(Track.id.in_(canonical))))
    if spotify_track_ids:
        tracks |= set(db.session.scalars(select(Track.id).where(Track.spotify_id.in_(spotify_track_ids))))
    if not tracks:
        return {"items": []}
    rows = db.session.execute(
        select(Profile.id, Profile.name, Profile.avatar_url, Credit.track_id)
        .join(Credit, Credit.profile_id == Profile.id)
        .where(Credit.track_id.in_(sorted(tracks)))
        .union(
            select(Profile.id, Profile.name, Profile.avatar_url, TrackArtist.track_id)
            .join(TrackArtist, TrackArtist.profile_id == Profile.id)
            .where(TrackArtist.track_id.in_(sorted(tracks)))
        )
    ).all()
    wanted = [n.lower() for n in names]
    found: dict[str, dict] = {}
    for pid, name, avatar, track_id in sorted(rows):
        if any(w in name.lower() for w in wanted):
            entry = found.setdefault(pid, {"id": pid, "name": name, "avatarUrl": avatar, "trackIds": []})
            if track_id not in entry["trackIds"]:
                entry["trackIds"].append(track_id)
    return {"items": list(found.values())}
