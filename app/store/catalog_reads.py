"""The catalog as `/v1`, the tool server and the widget read it: a profile, a track or an album by
its identifiers, a profile's credits a page at a time and its chart rows, a track's albums, an
album's credits, the role taxonomy, the rows a search's hits show, the profiles credited on given
tracks, and the rows of the widget's profile cards. SQLite and PostgreSQL run the same statements
here; the reads whose SQL depends on the store's text index (search, type-ahead, collaborators)
are app/store/catalog.py's.

Every lookup is an indexed equality (ids, `track_isrcs`, Spotify ids, UPC); every list is a
bounded page with its count, and a page past the end costs the count alone.

    credit_page    the count, the page (credit + track + album, joined), the roles of the page's
                   credits, the artists of its tracks: four statements whatever the page's size or
                   the catalog's, each an indexed lookup. The page's ids are picked from the
                   covering index (profile, release date, id) first, so a deep offset skips index
                   entries, not joined rows.
    card_rows      a batch of up to the widget's 24 cards in at most six statements whatever its
                   size (profiles, credit counts, role counts, newest credits, their roles, chart
                   rows). Each profile's newest credits come from the (profile, release date, id)
                   index with a LIMIT each, so a prolific profile costs no more rows than a new one
                   there; the role counts do read every credit of the batch's profiles (the top
                   roles are a profile's whole career, not its last few releases).

The records are the ORM classes where a whole row is read (Profile, Track, Album) and frozen
dataclasses for the rest. The statements are built once, at import, with bound parameters: building
a statement costs more Python time than SQLite spends running it. The one exception is the cards'
newest credits, a UNION ALL with one LIMITed member per profile asked for. Every method runs in
the request's session and never commits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from sqlalchemy import Executable, Integer, bindparam, func, select, union_all
from sqlalchemy.orm import aliased

from app.core.extensions import db
from app.models import (
    Album,
    ChartRow,
    Credit,
    CreditRole,
    Profile,
    Track,
    TrackArtist,
    TrackIsrc,
    credit_role_links,
)

# -- the records -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoleHeld:
    """A specific role ("Co-Producer") and the family it belongs to ("Producer"); a family held
    as itself is its own family."""

    name: str
    family: str


@dataclass(frozen=True, slots=True)
class Person:
    """A profile as a credit line names it: a track's artist, an album's credited profile."""

    id: str
    name: str
    avatar_url: str | None


@dataclass(frozen=True, slots=True)
class CreditedTrack:
    """A track as a credit line shows it."""

    id: str
    title: str
    popularity: int
    isrcs: tuple[str, ...]
    spotify_id: str | None
    spotify_preview_url: str | None


@dataclass(frozen=True, slots=True)
class CreditLine:
    """One of a profile's credits as its credit page shows it: the track, its album, the roles
    held on it, the track's artists in billing order."""

    credit_id: int
    release_date: date
    track: CreditedTrack
    album_id: str
    album_title: str
    album_art: str | None
    roles: tuple[RoleHeld, ...]
    artists: tuple[Person, ...]


@dataclass(frozen=True, slots=True)
class AlbumCredit:
    """Who is credited on one of an album's tracks, with the roles held."""

    credit_id: int
    profile: Person
    track: CreditedTrack
    roles: tuple[RoleHeld, ...]


@dataclass(frozen=True, slots=True)
class ChartLine:
    """One of a profile's chart rows (its analytics); `score_change` may be unknown."""

    chart_name: str
    position: int
    position_change: int
    score: int
    score_change: int | None
    credits_count: int
    percentage: float


@dataclass(frozen=True, slots=True)
class ProfileFigures:
    """A profile as a search hit shows it, with the figures computed when the catalog was loaded
    (the catalog's refresh_profile_stats): a prolific profile costs no more than any."""

    id: str
    name: str
    avatar_url: str | None
    popularity: int
    credit_count: int
    collaborator_count: int
    common_roles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TrackHit:
    """A track as a search hit shows it, with its first release (None: on no credit)."""

    id: str
    title: str
    popularity: int
    first_release: date | None


@dataclass(frozen=True, slots=True)
class OnTrack:
    """A profile credited on a track, or billed as one of its artists."""

    profile_id: str
    name: str
    avatar_url: str | None
    track_id: str


@dataclass(frozen=True, slots=True)
class RoleCount:
    """How many of a profile's credits hold a specific role."""

    profile_id: str
    role: str
    credits: int


@dataclass(frozen=True, slots=True)
class RecentCredit:
    """One of a profile's newest credits as a card shows it, with the specific roles held."""

    profile_id: str
    credit_id: int
    release_date: date
    title: str
    album: str
    roles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ChartPosition:
    """A profile's position on one chart."""

    profile_id: str
    chart_name: str
    position: int


@dataclass(frozen=True, slots=True)
class CardRows:
    """What the cards of a batch of profiles are made of: the profiles that exist (by id), their
    credit counts (a profile without credits is absent), the count of each role they hold, their
    newest credits (newest first: release date, then credit id), their chart positions."""

    profiles: dict[str, Profile]
    credit_counts: dict[str, int]
    role_counts: list[RoleCount]
    recent: list[RecentCredit]
    charts: list[ChartPosition]


# -- the statements ----------------------------------------------------------------------------------

_NEWEST_FIRST = (Credit.release_date.desc(), Credit.id.desc())

_CHILD, _FAMILY = aliased(CreditRole), aliased(CreditRole)
_PAGE_IDS = (
    select(Credit.id)
    .where(Credit.profile_id == bindparam("profile_id"))
    .order_by(*_NEWEST_FIRST)
    .limit(bindparam("limit"))
    .offset(bindparam("offset"))
    .subquery()
)
_COUNT_CREDITS = select(func.count()).select_from(Credit).where(Credit.profile_id == bindparam("profile_id"))
_PAGE_ROWS = (
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
    .order_by(*_NEWEST_FIRST)
)
_ROLES_OF = (
    select(credit_role_links.c.credit_id, _CHILD.name, func.coalesce(_FAMILY.name, _CHILD.name))
    .join(_CHILD, _CHILD.id == credit_role_links.c.role_id)
    .outerjoin(_FAMILY, _FAMILY.id == _CHILD.parent_id)
    .where(credit_role_links.c.credit_id.in_(bindparam("credit_ids", expanding=True)))
    .order_by(credit_role_links.c.credit_id, _CHILD.id)
)
_ARTISTS_OF = (
    select(TrackArtist.track_id, Profile.id, Profile.name, Profile.avatar_url)
    .join(Profile, Profile.id == TrackArtist.profile_id)
    .where(TrackArtist.track_id.in_(bindparam("track_ids", expanding=True)))
    .order_by(TrackArtist.track_id, TrackArtist.position)
)
_CHART_ROWS = (
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

# One statement, one round trip: the ISRC index gives the id, the primary key the row.
_TRACK_BY_ISRC = select(Track).where(
    Track.id
    == select(TrackIsrc.track_id)
    .where(TrackIsrc.isrc == bindparam("value"))
    .order_by(TrackIsrc.track_id)
    .limit(1)
    .scalar_subquery()
)
_TRACK_BY_SPOTIFY = select(Track).where(Track.spotify_id == bindparam("value")).order_by(Track.id).limit(1)
_ALBUM_BY = {
    key: select(Album).where(column == bindparam("value")).order_by(Album.id).limit(1)
    for key, column in (("upc", Album.upc), ("spotify", Album.spotify_id))
}

# Typed, as a LIMIT of a Python int is (PostgreSQL's statement casts them: `LIMIT %(limit)s::INTEGER`).
_LIMIT, _OFFSET = bindparam("limit", type_=Integer), bindparam("offset", type_=Integer)
_TRACK_ALBUM_IDS = select(Credit.album_id).where(Credit.track_id == bindparam("track_id")).scalar_subquery()
_COUNT_TRACK_ALBUMS = select(func.count()).select_from(Album).where(Album.id.in_(_TRACK_ALBUM_IDS))
_TRACK_ALBUMS = (
    select(Album)
    .where(Album.id.in_(_TRACK_ALBUM_IDS))
    .order_by(Album.release_date.desc(), Album.id)
    .limit(_LIMIT)
    .offset(_OFFSET)
)
_COUNT_ALBUM_CREDITS = select(func.count()).select_from(Credit).where(Credit.album_id == bindparam("album_id"))
_ALBUM_CREDITS = (
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
    .where(Credit.album_id == bindparam("album_id"))
    .order_by(Track.id, Credit.id)
    .limit(_LIMIT)
    .offset(_OFFSET)
)
_TAXONOMY_FAMILY = aliased(CreditRole)
_TAXONOMY = (
    select(CreditRole.name, _TAXONOMY_FAMILY.name)
    .join(_TAXONOMY_FAMILY, _TAXONOMY_FAMILY.id == CreditRole.parent_id)
    .order_by(_TAXONOMY_FAMILY.id, CreditRole.id)
)

_PROFILE_HITS = select(
    Profile.id,
    Profile.name,
    Profile.avatar_url,
    Profile.popularity,
    Profile.credit_count,
    Profile.collaborator_count,
    Profile.common_roles,
).where(Profile.id.in_(bindparam("ids", expanding=True)))
_TRACK_HITS = select(Track.id, Track.title, Track.popularity).where(Track.id.in_(bindparam("ids", expanding=True)))
_FIRST_RELEASES = (
    select(Credit.track_id, func.min(Credit.release_date))
    .where(Credit.track_id.in_(bindparam("ids", expanding=True)))
    .group_by(Credit.track_id)
)
_ALBUM_HITS = select(Album).where(Album.id.in_(bindparam("ids", expanding=True)))

_TRACKS_WITH_IDS = select(Track.id).where(Track.id.in_(bindparam("ids", expanding=True)))
_TRACKS_WITH_SPOTIFY_IDS = select(Track.id).where(Track.spotify_id.in_(bindparam("ids", expanding=True)))
_CREDITED_ON = (
    select(Profile.id, Profile.name, Profile.avatar_url, Credit.track_id)
    .join(Credit, Credit.profile_id == Profile.id)
    .where(Credit.track_id.in_(bindparam("credited", expanding=True)))
    .union(
        select(Profile.id, Profile.name, Profile.avatar_url, TrackArtist.track_id)
        .join(TrackArtist, TrackArtist.profile_id == Profile.id)
        .where(TrackArtist.track_id.in_(bindparam("billed", expanding=True)))
    )
)

_CARD_PROFILES = select(Profile).where(Profile.id.in_(bindparam("ids", expanding=True)))
_CARD_CREDIT_COUNTS = (
    select(Credit.profile_id, func.count())
    .where(Credit.profile_id.in_(bindparam("ids", expanding=True)))
    .group_by(Credit.profile_id)
)
# Counted by role id (from the credits' covering index and the links' primary key), named after.
_HELD = (
    select(Credit.profile_id, credit_role_links.c.role_id, func.count().label("credits"))
    .join(credit_role_links, credit_role_links.c.credit_id == Credit.id)
    .where(Credit.profile_id.in_(bindparam("ids", expanding=True)))
    .group_by(Credit.profile_id, credit_role_links.c.role_id)
    .subquery()
)
_CARD_ROLE_COUNTS = select(_HELD.c.profile_id, CreditRole.name, _HELD.c.credits).join(
    CreditRole, CreditRole.id == _HELD.c.role_id
)
_CARD_CHARTS = select(ChartRow.profile_id, ChartRow.position, ChartRow.chart_name).where(
    ChartRow.profile_id.in_(bindparam("ids", expanding=True))
)


def _newest_credits(profile_ids: Sequence[str], per_profile: int) -> Executable:
    """Each profile's `per_profile` newest credits (as its credit pages order them), one member of a
    UNION ALL per profile: built per call, as the number of members is the batch's size."""
    newest = [
        select(Credit.id, Credit.profile_id, Credit.release_date, Track.title, Album.title.label("album"))
        .join(Track, Track.id == Credit.track_id)
        .join(Album, Album.id == Credit.album_id)
        .where(Credit.profile_id == profile_id)
        .order_by(*_NEWEST_FIRST)
        .limit(per_profile)
        .subquery()
        for profile_id in profile_ids
    ]
    # Each member wrapped as a subquery: SQLite allows no LIMIT on a compound select's members.
    return union_all(*(select(*sub.c) for sub in newest))


def _track(
    track_id: str, title: str, popularity: int, isrcs: Iterable[str] | None, spotify_id: str | None, preview: str | None
) -> CreditedTrack:
    return CreditedTrack(track_id, title, popularity, tuple(isrcs or ()), spotify_id, preview)


class SqlCatalogReads:
    """The catalog's reads, the same SQL on SQLite and PostgreSQL."""

    # -- one row by its identifiers ------------------------------------------------------------------

    def profile(self, profile_id: str) -> Profile | None:
        """The profile with this id (the caller gives a canonical UUID), or None."""
        return db.session.get(Profile, profile_id)

    def track_by(self, id_key: str, value: str) -> Track | None:
        """A track by `id` (a canonical UUID), `isrc` (any case, hyphens allowed: "usrc1-7607839")
        or `spotify`; None for an unknown key or value. An ISRC or Spotify id on more than one
        track finds the first by id."""
        if id_key == "id":
            return db.session.get(Track, value)
        if id_key == "isrc":
            by_isrc: Track | None = db.session.scalar(_TRACK_BY_ISRC, {"value": value.upper().replace("-", "")})
            return by_isrc
        if id_key == "spotify":
            track: Track | None = db.session.scalar(_TRACK_BY_SPOTIFY, {"value": value})
            return track
        return None

    def album_by(self, id_key: str, value: str) -> Album | None:
        """An album by `id` (a canonical UUID), `upc` or `spotify`; None for an unknown key or value."""
        if id_key == "id":
            return db.session.get(Album, value)
        statement = _ALBUM_BY.get(id_key)
        if statement is None:
            return None
        album: Album | None = db.session.scalar(statement, {"value": value})
        return album

    # -- a profile's credits and charts --------------------------------------------------------------

    def credit_page(self, profile_id: str, limit: int, offset: int) -> tuple[int, list[CreditLine]]:
        """How many credits the profile has, and `limit` of them from `offset`, newest release first
        (ties: newest credit first), each with its roles and its track's artists."""
        total: int = db.session.scalar(_COUNT_CREDITS, {"profile_id": profile_id}) or 0
        if offset >= total:
            return total, []
        rows = db.session.execute(_PAGE_ROWS, {"profile_id": profile_id, "limit": limit, "offset": offset}).all()
        roles = self._roles_of([row[0] for row in rows])
        artists = self._artists_of({row[2] for row in rows})
        return total, [
            CreditLine(
                credit_id,
                released,
                _track(track_id, title, popularity, isrcs, spotify_id, preview),
                album_id,
                album_title,
                album_art,
                roles.get(credit_id, ()),
                artists.get(track_id, ()),
            )
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

    def chart_rows(self, profile_id: str) -> list[ChartLine]:
        """The profile's chart rows, by chart name."""
        return [ChartLine(*row) for row in db.session.execute(_CHART_ROWS, {"profile_id": profile_id})]

    # -- tracks and albums ---------------------------------------------------------------------------

    def track_albums(self, track_id: str, limit: int, offset: int) -> tuple[int, list[Album]]:
        """How many albums the track appears on (from its credits), and `limit` of them from
        `offset`, newest release first (ties by id)."""
        total: int = db.session.scalar(_COUNT_TRACK_ALBUMS, {"track_id": track_id}) or 0
        if offset >= total:
            return total, []
        params = {"track_id": track_id, "limit": limit, "offset": offset}
        return total, list(db.session.scalars(_TRACK_ALBUMS, params).all())

    def album_credits(self, album_id: str, limit: int, offset: int) -> tuple[int, list[AlbumCredit]]:
        """How many credits the album's tracks have, and `limit` of them from `offset`: one per
        credited profile and track, with the roles held (ordered by track, then credit)."""
        total: int = db.session.scalar(_COUNT_ALBUM_CREDITS, {"album_id": album_id}) or 0
        if offset >= total:
            return total, []
        rows = db.session.execute(_ALBUM_CREDITS, {"album_id": album_id, "limit": limit, "offset": offset}).all()
        roles = self._roles_of([row[0] for row in rows])
        return total, [
            AlbumCredit(
                credit_id,
                Person(pid, name, avatar),
                _track(tid, title, popularity, isrcs, spotify_id, preview),
                roles.get(credit_id, ()),
            )
            for credit_id, pid, name, avatar, tid, title, popularity, isrcs, spotify_id, preview in rows
        ]

    def roles(self) -> list[RoleHeld]:
        """The whole taxonomy: every specific role with its family, by family then role."""
        return [RoleHeld(child, family) for child, family in db.session.execute(_TAXONOMY)]

    # -- what a search's hits show -------------------------------------------------------------------

    def profile_hits(self, ids: Collection[str]) -> dict[str, ProfileFigures]:
        """The profiles among `ids` that exist, with their figures (nothing read for no ids)."""
        if not ids:
            return {}
        return {
            row.id: ProfileFigures(
                row.id,
                row.name,
                row.avatar_url,
                row.popularity,
                row.credit_count,
                row.collaborator_count,
                tuple(row.common_roles or ()),
            )
            for row in db.session.execute(_PROFILE_HITS, {"ids": list(ids)})
        }

    def track_hits(self, ids: Collection[str]) -> dict[str, TrackHit]:
        """The tracks among `ids` that exist, with their first release (nothing read for no ids)."""
        if not ids:
            return {}
        rows = db.session.execute(_TRACK_HITS, {"ids": list(ids)}).all()
        released: dict[str, date] = dict(db.session.execute(_FIRST_RELEASES, {"ids": list(ids)}).all())
        return {
            track_id: TrackHit(track_id, title, popularity, released.get(track_id))
            for track_id, title, popularity in rows
        }

    def album_hits(self, ids: Collection[str]) -> dict[str, Album]:
        """The albums among `ids` that exist (nothing read for no ids)."""
        if not ids:
            return {}
        return {album.id: album for album in db.session.scalars(_ALBUM_HITS, {"ids": list(ids)})}

    # -- who is on these tracks ----------------------------------------------------------------------

    def tracks_with_ids(self, ids: Collection[str]) -> set[str]:
        """The ids among `ids` (canonical UUIDs) that name a track."""
        return set(db.session.scalars(_TRACKS_WITH_IDS, {"ids": list(ids)}))

    def tracks_with_spotify_ids(self, spotify_ids: Collection[str]) -> set[str]:
        """The ids of the tracks with one of these Spotify ids."""
        return set(db.session.scalars(_TRACKS_WITH_SPOTIFY_IDS, {"ids": list(spotify_ids)}))

    def credited_on(self, track_ids: Collection[str]) -> list[OnTrack]:
        """The profiles credited on these tracks or billed as their artists, once per profile and
        track, by profile id then track id."""
        ordered = sorted(track_ids)
        rows = db.session.execute(_CREDITED_ON, {"credited": ordered, "billed": ordered}).all()
        return [OnTrack(pid, name, avatar, track_id) for pid, name, avatar, track_id in sorted(rows)]

    # -- the widget's cards --------------------------------------------------------------------------

    def card_rows(self, profile_ids: Sequence[str], recent: int) -> CardRows:
        """The rows of the cards of `profile_ids` (canonical UUIDs): `recent` newest credits each.
        When none of them exists, the profiles' lookup is the only statement."""
        profiles = {p.id: p for p in db.session.scalars(_CARD_PROFILES, {"ids": list(profile_ids)})}
        found = [pid for pid in profile_ids if pid in profiles]
        if not found:
            return CardRows(profiles, {}, [], [], [])
        params = {"ids": found}
        counts: dict[str, int] = dict(db.session.execute(_CARD_CREDIT_COUNTS, params).all())
        role_counts = [RoleCount(*row) for row in db.session.execute(_CARD_ROLE_COUNTS, params)]
        newest = db.session.execute(_newest_credits(found, recent)).all()
        roles = self._roles_of([row[0] for row in newest])
        recent_credits = [
            RecentCredit(profile_id, credit_id, released, title, album, tuple(r.name for r in roles.get(credit_id, ())))
            for credit_id, profile_id, released, title, album in sorted(
                newest, key=lambda row: (row[2], row[0]), reverse=True
            )
        ]
        charts = [
            ChartPosition(profile_id, chart, position)
            for profile_id, position, chart in db.session.execute(_CARD_CHARTS, params)
        ]
        return CardRows(profiles, counts, role_counts, recent_credits, charts)

    # -- what several reads share ---------------------------------------------------------------------

    def _roles_of(self, credit_ids: list[int]) -> dict[int, tuple[RoleHeld, ...]]:
        """The roles held on each credit, in role order (nothing read for no credits)."""
        found: dict[int, list[RoleHeld]] = defaultdict(list)
        if credit_ids:
            for credit_id, name, family in db.session.execute(_ROLES_OF, {"credit_ids": credit_ids}):
                found[credit_id].append(RoleHeld(name, family))
        return {credit_id: tuple(held) for credit_id, held in found.items()}

    def _artists_of(self, track_ids: set[str]) -> dict[str, tuple[Person, ...]]:
        """Each track's artists in billing order (nothing read for no tracks)."""
        found: dict[str, list[Person]] = defaultdict(list)
        if track_ids:
            for track_id, profile_id, name, avatar in db.session.execute(_ARTISTS_OF, {"track_ids": sorted(track_ids)}):
                found[track_id].append(Person(profile_id, name, avatar))
        return {track_id: tuple(artists) for track_id, artists in found.items()}
