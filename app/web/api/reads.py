"""The catalog reads behind `/v1`, and the spec's JSON shapes for them.

A page of credits costs a fixed number of queries whatever its size or the catalog's: the count,
the page (credit + track + album, joined), the roles of the page's credits, and the artists of
its tracks - each an indexed lookup. The page's ids are picked from the covering index
(profile, release date, id) first, so a deep offset skips index entries, not joined rows."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import aliased

from app.core.extensions import db
from app.models import Album, ChartRow, Credit, CreditRole, Profile, Track, TrackArtist, credit_role_links
from app.web.api.envelope import page
from app.web.api.paging import PageRequest

NEWEST_FIRST = (Credit.release_date.desc(), Credit.id.desc())

# The statements are built once (with bound parameters) rather than per request: building a
# statement costs more Python time than SQLite spends running it.
_CHILD, _FAMILY = aliased(CreditRole), aliased(CreditRole)
_PAGE_IDS = (
    select(Credit.id)
    .where(Credit.profile_id == bindparam("profile_id"))
    .order_by(*NEWEST_FIRST)
    .limit(bindparam("limit"))
    .offset(bindparam("offset"))
    .subquery()
)
COUNT_CREDITS = select(func.count()).select_from(Credit).where(Credit.profile_id == bindparam("profile_id"))
PAGE_ROWS = (
    select(
        Credit.id,
        Credit.release_date,
        Track.id,
        Track.title,
        Track.popularity,
        Track.isrcs,
        Track.spotify_id,
        Track.spotify_preview_url,
        Album.id,
        Album.title,
        Album.album_art,
    )
    .join(_PAGE_IDS, _PAGE_IDS.c.id == Credit.id)
    .join(Track, Track.id == Credit.track_id)
    .join(Album, Album.id == Credit.album_id)
    .order_by(*NEWEST_FIRST)
)
ROLES_OF = (
    select(credit_role_links.c.credit_id, _CHILD.name, func.coalesce(_FAMILY.name, _CHILD.name))
    .join(_CHILD, _CHILD.id == credit_role_links.c.role_id)
    .outerjoin(_FAMILY, _FAMILY.id == _CHILD.parent_id)
    .where(credit_role_links.c.credit_id.in_(bindparam("credit_ids", expanding=True)))
    .order_by(credit_role_links.c.credit_id, _CHILD.id)
)
ARTISTS_OF = (
    select(TrackArtist.track_id, Profile.id, Profile.name, Profile.avatar_url)
    .join(Profile, Profile.id == TrackArtist.profile_id)
    .where(TrackArtist.track_id.in_(bindparam("track_ids", expanding=True)))
    .order_by(TrackArtist.track_id, TrackArtist.position)
)
CHART_ROWS = (
    select(
        ChartRow.chart_name,
        ChartRow.position,
        ChartRow.position_change,
        ChartRow.score,
        ChartRow.score_change,
        ChartRow.credits_count,
        ChartRow.percentage,
    )
    .where(ChartRow.profile_id == bindparam("profile_id"))
    .order_by(ChartRow.chart_name, ChartRow.id)
)


def profile_json(profile: Profile) -> dict:
    return {
        "id": profile.id,
        "name": profile.name,
        "city": profile.city,
        "country": profile.country,
        "bio": profile.bio,
        "website": profile.website,
        "facebook": profile.facebook,
        "twitter": profile.twitter,
        "instagram": profile.instagram,
        "spotifyId": profile.spotify_id,
        "avatarUrl": profile.avatar_url,
    }


def find_profile(profile_id: str) -> Profile | None:
    return db.session.get(Profile, profile_id)


def credit_page(profile_id: str, wanted: PageRequest) -> dict:
    """One page of a profile's credit rows, newest release first (ties: newest credit first)."""
    total = db.session.scalar(COUNT_CREDITS, {"profile_id": profile_id})
    if wanted.offset >= total:
        return page(wanted.limit, wanted.offset, total, [])
    rows = db.session.execute(
        PAGE_ROWS, {"profile_id": profile_id, "limit": wanted.limit, "offset": wanted.offset}
    ).all()
    roles = roles_of([row[0] for row in rows])
    artists = artists_of({row[2] for row in rows})
    items = [
        {
            "credits": roles.get(credit_id, []),
            "track": {
                "id": track_id,
                "title": title,
                "popularity": popularity,
                "isrcs": list(isrcs or []),
                "spotifyId": spotify_id,
                "spotifyPreviewUrl": preview,
            },
            "album": {"id": album_id, "title": album_title, "albumArt": album_art},
            "releaseDate": released.isoformat(),
            "artists": artists.get(track_id, []),
        }
        for (
            credit_id,
            released,
            track_id,
            title,
            popularity,
            isrcs,
            spotify_id,
            preview,
            album_id,
            album_title,
            album_art,
        ) in rows
    ]
    return page(wanted.limit, wanted.offset, total, items)


def roles_of(credit_ids: list[int]) -> dict[int, list[dict]]:
    """The roles held on each credit: the specific role and the family it belongs to."""
    found: dict[int, list[dict]] = defaultdict(list)
    if credit_ids:
        for credit_id, name, family in db.session.execute(ROLES_OF, {"credit_ids": credit_ids}):
            found[credit_id].append({"child": name, "parent": family})
    return found


def artists_of(track_ids: set[str]) -> dict[str, list[dict]]:
    """Each track's artists in billing order."""
    found: dict[str, list[dict]] = defaultdict(list)
    if track_ids:
        for track_id, profile_id, name, avatar in db.session.execute(ARTISTS_OF, {"track_ids": sorted(track_ids)}):
            found[track_id].append({"id": profile_id, "name": name, "avatarUrl": avatar})
    return found


def chart_rows(profile_id: str) -> list[dict]:
    """A profile's chart rows (its analytics); `scoreChange` is left out where it is unknown."""
    return [
        {
            "chartName": name,
            "position": position,
            "positionChange": position_change,
            "score": score,
            **({"scoreChange": score_change} if score_change is not None else {}),
            "creditsCount": credits_count,
            "percentage": percentage,
        }
        for name, position, position_change, score, score_change, credits_count, percentage in db.session.execute(
            CHART_ROWS, {"profile_id": profile_id}
        )
    ]
