"""The credits catalog a member's token reads: profiles, tracks, albums, the credit-role
taxonomy, credits and chart rows.

The catalog is read-only for the data API. Every read the API makes is backed by an index:
a member's credits by (profile, release date, id) - which also gives the page its stable
order - and the children of a page (roles, track artists) by the ids on that page.

Search reads `search_key`, a name or title folded once when it is written (`fold`: lower case,
accents and punctuation gone, words separated by one space, a space at each end), so that every
store matches the same text the same way and indexes it as it is: a B-tree for exact and prefix
matches, and the store's text index for words and fragments (app/store/catalog.py). A profile's
figures that search ranks and shows (popularity, credits, collaborators, common roles) are
computed when the catalog is loaded (`refresh_profile_stats` in the store), not per search."""

from __future__ import annotations

import unicodedata
from datetime import date
from typing import Any

from sqlalchemy import JSON, Date, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates

from app.core.extensions import Model, db

# Letters that carry no combining mark to strip (NFKD leaves them whole); unaccent folds them so.
_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
_JOINERS = str.maketrans({"'": None, "\u2019": None, "`": None})
SEARCH_KEY_LENGTH = 320


def fold(text: str) -> str:
    """The form search compares: "Beyoncé feat. JAY-Z" -> " beyonce feat jay z ". Lower case,
    no accents, apostrophes dropped ("don't" -> "dont"), any other run of non-letters and
    non-digits one space, one space at each end so a word start is always " word"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_JOINERS))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).translate(_LETTERS)
    words = "".join(ch if ch.isalnum() else " " for ch in plain).split()
    return f" {' '.join(words)} " if words else ""


def _folded(column: str) -> Any:
    """A column default: the search key of the row's `column` (a Core insert gets it too)."""

    def default(context: Any) -> str:
        return fold(context.get_current_parameters().get(column) or "")[:SEARCH_KEY_LENGTH]

    return default


def _search_key() -> Any:
    # Bytewise order on PostgreSQL ("C"), as SQLite's: a prefix is a range of the B-tree.
    return String(SEARCH_KEY_LENGTH).with_variant(String(SEARCH_KEY_LENGTH, collation="C"), "postgresql")


# The stores' text indexes (migration 0020): on SQLite FTS5 tables (and their shadow tables) kept
# in step by triggers, on PostgreSQL GIN indexes and the names' vocabulary (0026), kept by a
# trigger. Not models: the schema comparison leaves them be.
_SEARCH_TABLES = ("profiles_search", "tracks_search", "albums_search", "catalog_words")
_SEARCH_INDEXES = (
    *(f"ix_{t}_search_{kind}" for t in ("profiles", "tracks", "albums") for kind in ("trgm", "words")),
    "ix_catalog_words_trgm",
)


def outside_the_models(name: str | None, type_: str) -> bool:
    """Whether a table or index of the database is one of the stores' text indexes (Alembic's
    `include_name` answers the opposite)."""
    if type_ == "table":
        return bool(name) and any(name == t or name.startswith(t + "_") for t in _SEARCH_TABLES)  # type: ignore[union-attr]
    return type_ == "index" and name in _SEARCH_INDEXES


class Profile(Model):
    """A credited person or act (the spec's Profile). A member may be linked to one."""

    __tablename__ = "profiles"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    city: Mapped[str | None] = mapped_column(String(120), nullable=True)
    country: Mapped[str | None] = mapped_column(String(120), nullable=True)
    bio: Mapped[str | None] = mapped_column(Text, nullable=True)
    website: Mapped[str | None] = mapped_column(String(500), nullable=True)
    facebook: Mapped[str | None] = mapped_column(String(500), nullable=True)
    twitter: Mapped[str | None] = mapped_column(String(500), nullable=True)
    instagram: Mapped[str | None] = mapped_column(String(500), nullable=True)
    spotify_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    avatar_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    search_key: Mapped[str] = mapped_column(_search_key(), default=_folded("name"), index=True)
    # Computed from the credits when the catalog is loaded (the store's refresh_profile_stats):
    # the most popular credited track's popularity, credit rows, distinct collaborators (profiles
    # credited on the same tracks), the three most held roles.
    popularity: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    credit_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    collaborator_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    common_roles: Mapped[list[str]] = mapped_column(JSON, default=list)

    __table_args__ = (
        Index("ix_profiles_popularity", popularity.desc(), "id"),
        Index("ix_profiles_search_rank", "search_key", popularity.desc(), "id"),  # a search's exact tier
    )

    @validates("name")
    def _fold_name(self, _key: str, value: str) -> str:
        self.search_key = fold(value or "")[:SEARCH_KEY_LENGTH]
        return value


class Track(Model):
    __tablename__ = "tracks"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    popularity: Mapped[int] = mapped_column(Integer, default=0)
    isrcs: Mapped[list[str]] = mapped_column(JSON, default=list)
    spotify_id: Mapped[str] = mapped_column(String(64), index=True)
    spotify_preview_url: Mapped[str] = mapped_column(String(500))
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    search_key: Mapped[str] = mapped_column(_search_key(), default=_folded("title"), index=True)

    __table_args__ = (
        Index("ix_tracks_popularity", popularity.desc(), "id"),
        Index("ix_tracks_search_rank", "search_key", popularity.desc(), "id"),  # a search's exact tier
    )

    artists: Mapped[list[TrackArtist]] = relationship(
        back_populates="track", order_by="TrackArtist.position", cascade="all, delete-orphan"
    )

    @validates("title")
    def _fold_title(self, _key: str, value: str) -> str:
        self.search_key = fold(value or "")[:SEARCH_KEY_LENGTH]
        return value


class Album(Model):
    __tablename__ = "albums"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    album_art: Mapped[str | None] = mapped_column(String(500), nullable=True)
    upc: Mapped[str | None] = mapped_column(String(14), nullable=True, index=True)
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    release_date: Mapped[date] = mapped_column(Date)
    # Looked up by the catalog API (`/album/spotify/{id}`); popularity: its most popular track's.
    spotify_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    popularity: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    search_key: Mapped[str] = mapped_column(_search_key(), default=_folded("title"), index=True)

    __table_args__ = (
        Index("ix_albums_popularity", popularity.desc(), "id"),
        Index("ix_albums_search_rank", "search_key", popularity.desc(), "id"),  # a search's exact tier
    )

    @validates("title")
    def _fold_title(self, _key: str, value: str) -> str:
        self.search_key = fold(value or "")[:SEARCH_KEY_LENGTH]
        return value


class TrackIsrc(Model):
    """Which track an ISRC names: an index over `Track.isrcs` (a JSON list cannot be indexed the
    same way on SQLite and PostgreSQL), for the catalog API's `/track/isrc/{isrc}`. Whoever
    writes a track's `isrcs` writes these rows too (the demo seed, the tests' factories)."""

    __tablename__ = "track_isrcs"

    isrc: Mapped[str] = mapped_column(String(16), primary_key=True)
    track_id: Mapped[str] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True, index=True)


class TrackArtist(Model):
    """The artists a track is released under, in billing order (each is a profile)."""

    __tablename__ = "track_artists"

    track_id: Mapped[str] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"), index=True)

    track: Mapped[Track] = relationship(back_populates="artists")
    profile: Mapped[Profile] = relationship(lazy="joined")


class CreditRole(Model):
    """The role taxonomy: a family (parent_id NULL, e.g. "Producer") and its specific roles
    (e.g. "Co-Producer"). A credit names specific roles; the family is read through the parent."""

    __tablename__ = "credit_roles"
    __table_args__ = (UniqueConstraint("parent_id", "name", name="uq_credit_roles_parent_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    # No index of its own: uq_credit_roles_parent_name, led by parent_id, serves lookups by family.
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("credit_roles.id"), nullable=True)

    parent: Mapped[CreditRole | None] = relationship(remote_side=[id], lazy="joined", join_depth=1)


credit_role_links = db.Table(
    "credit_role_links",
    db.Column("credit_id", ForeignKey("credits.id", ondelete="CASCADE"), primary_key=True),
    db.Column("role_id", ForeignKey("credit_roles.id"), primary_key=True),
)


class Credit(Model):
    """One credited work of a profile: a track on an album, with the roles held on it."""

    __tablename__ = "credits"
    __table_args__ = (
        UniqueConstraint("profile_id", "track_id", "album_id", name="uq_credits_profile_track_album"),
        # The page: a profile's credits, newest release first; the id breaks ties so the order
        # is total and stable. The index also answers the count.
        Index("ix_credits_profile_release", "profile_id", "release_date", "id"),
        # Who else is credited on a track (collaborators): read from the index alone.
        Index("ix_credits_track_profile", "track_id", "profile_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    track_id: Mapped[str] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"))
    album_id: Mapped[str] = mapped_column(ForeignKey("albums.id", ondelete="CASCADE"), index=True)
    # The album's release date, copied here so the page order is served by one index.
    release_date: Mapped[date] = mapped_column(Date)

    profile: Mapped[Profile] = relationship()
    track: Mapped[Track] = relationship()
    album: Mapped[Album] = relationship()
    roles: Mapped[list[CreditRole]] = relationship(secondary=credit_role_links, order_by=CreditRole.id)


class ProfileCollaborator(Model):
    """Who a prolific profile shares tracks with, counted when the catalog is loaded (the store's
    refresh_profile_stats): for a profile with thousands of credits, counting them per request
    would join tens of thousands of credit rows. Profiles below the store's threshold are counted
    live from the (track, profile) index; the answer is the same."""

    __tablename__ = "profile_collaborators"

    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True)
    collaborator_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True)
    shared: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_profile_collaborators_page", "profile_id", shared.desc(), "collaborator_id"),)


class ChartRow(Model):
    """A profile's standing on one chart (the member's analytics)."""

    __tablename__ = "chart_rows"
    __table_args__ = (UniqueConstraint("profile_id", "chart_name", name="uq_chart_rows_profile_chart"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    chart_name: Mapped[str] = mapped_column(String(120))
    position: Mapped[int] = mapped_column(Integer)
    position_change: Mapped[int] = mapped_column(Integer, default=0)
    score: Mapped[int] = mapped_column(Integer)
    score_change: Mapped[int | None] = mapped_column(Integer, nullable=True)  # may be absent on a row
    credits_count: Mapped[int] = mapped_column(Integer)
    percentage: Mapped[float] = mapped_column(Float)
