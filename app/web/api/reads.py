"""The spec's JSON shapes for a profile, its credit pages and its chart rows - the reads both doors
reach (a sign-in token its own member's, a key any profile's), and the tool server and the widget
answer with too. The rows are the store's (`store().catalog_reads`, app/store/catalog_reads.py,
which says what each read costs: a page of credits a fixed number of statements whatever its size
or the catalog's); what is here is the paging rules and the shapes."""

from __future__ import annotations

from app.models import Profile
from app.store import store
from app.store.catalog_reads import CreditedTrack, RoleHeld
from app.web.api.envelope import page
from app.web.api.paging import PageRequest


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
    """The profile with this id (a canonical UUID: the caller's rules made it one), or None."""
    return store().catalog_reads.profile(profile_id)


def roles_json(roles: tuple[RoleHeld, ...]) -> list[dict]:
    """The roles held on a credit: the specific role and the family it belongs to."""
    return [{"child": role.name, "parent": role.family} for role in roles]


def credited_track_json(track: CreditedTrack) -> dict:
    return {
        "id": track.id,
        "title": track.title,
        "popularity": track.popularity,
        "isrcs": list(track.isrcs),
        "spotifyId": track.spotify_id,
        "spotifyPreviewUrl": track.spotify_preview_url,
    }


def credit_page(profile_id: str, wanted: PageRequest) -> dict:
    """One page of a profile's credit rows, newest release first (ties: newest credit first)."""
    total, lines = store().catalog_reads.credit_page(profile_id, wanted.limit, wanted.offset)
    items = [
        {
            "credits": roles_json(line.roles),
            "track": credited_track_json(line.track),
            "album": {"id": line.album_id, "title": line.album_title, "albumArt": line.album_art},
            "releaseDate": line.release_date.isoformat(),
            "artists": [{"id": a.id, "name": a.name, "avatarUrl": a.avatar_url} for a in line.artists],
        }
        for line in lines
    ]
    return page(wanted.limit, wanted.offset, total, items)


def chart_rows(profile_id: str) -> list[dict]:
    """A profile's chart rows (its analytics); `scoreChange` is left out where it is unknown."""
    return [
        {
            "chartName": row.chart_name,
            "position": row.position,
            "positionChange": row.position_change,
            "score": row.score,
            **({"scoreChange": row.score_change} if row.score_change is not None else {}),
            "creditsCount": row.credits_count,
            "percentage": row.percentage,
        }
        for row in store().catalog_reads.chart_rows(profile_id)
    ]
