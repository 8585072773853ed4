"""Rosters: a member's named lists of the catalog profiles they represent, in SQLAlchemy Core, as
frozen records (app/models/roster.py says what a roster is for).

The key door's question, "is this profile on that roster?", is `on_roster`: one lookup by the
primary key of `roster_profiles`, asked on every request of a workspace key, so a profile taken
off the roster is out of the key's reach from the next request on. Every function runs in the
caller's transaction and never commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists, func, select
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.models import ApiKey, KeyKind, Profile, Roster, RosterProfile
from app.store.statements import run

_rosters, _entries, _profiles, _keys = (
    Roster.__table__,
    RosterProfile.__table__,
    Profile.__table__,
    ApiKey.__table__,
)


@dataclass(frozen=True, slots=True)
class StoredRoster:
    """A roster, read-only, with how many profiles it holds and how many live keys reach it."""

    id: str
    owner_id: str
    name: str
    created_at: datetime
    profiles: int
    live_keys: int


@dataclass(frozen=True, slots=True)
class RosterEntry:
    """A profile on a roster, as the account page lists it."""

    profile_id: str
    name: str
    city: str | None
    country: str | None
    avatar_url: str | None
    added_at: datetime


@dataclass(frozen=True, slots=True)
class CatalogProfile:
    """A catalog profile by name, as a roster change names it."""

    id: str
    name: str


_PROFILE_COUNT = (
    select(func.count())
    .select_from(_entries)
    .where(_entries.c.roster_id == _rosters.c.id)
    .correlate(_rosters)
    .scalar_subquery()
)
_LIVE_KEY_COUNT = (
    select(func.count())
    .select_from(_keys)
    .where(_keys.c.roster_id == _rosters.c.id, _keys.c.kind == KeyKind.WORKSPACE.value, _keys.c.revoked_at.is_(None))
    .correlate(_rosters)
    .scalar_subquery()
)
_ROSTERS = select(
    _rosters.c.id,
    _rosters.c.owner_id,
    _rosters.c.name,
    _rosters.c.created_at,
    _PROFILE_COUNT.label("profiles"),
    _LIVE_KEY_COUNT.label("live_keys"),
)
_OF_OWNER = _ROSTERS.where(_rosters.c.owner_id == bindparam("owner_id")).order_by(_rosters.c.name, _rosters.c.id)
_BY_ID = _ROSTERS.where(_rosters.c.id == bindparam("roster_id"))
_ON_ROSTER = select(
    exists().where(_entries.c.roster_id == bindparam("roster_id"), _entries.c.profile_id == bindparam("profile_id"))
)
_ROSTER_ORDER = (_profiles.c.name, _profiles.c.id)  # the roster's order: by name, as a reader looks one up
_ENTRIES = (
    select(
        _profiles.c.id,
        _profiles.c.name,
        _profiles.c.city,
        _profiles.c.country,
        _profiles.c.avatar_url,
        _entries.c.added_at,
    )
    .join_from(_entries, _profiles, _profiles.c.id == _entries.c.profile_id)
    .where(_entries.c.roster_id == bindparam("roster_id"))
    .order_by(*_ROSTER_ORDER)
)
_PROFILE_IDS = (
    select(_entries.c.profile_id)
    .join_from(_entries, _profiles, _profiles.c.id == _entries.c.profile_id)
    .where(_entries.c.roster_id == bindparam("roster_id"))
    .order_by(*_ROSTER_ORDER)
    .limit(bindparam("limit"))
    .offset(bindparam("offset"))
)
_COUNT = (
    select(func.count())
    .select_from(_entries)
    .join(_profiles, _profiles.c.id == _entries.c.profile_id)
    .where(_entries.c.roster_id == bindparam("roster_id"))
)
_PROFILE = select(_profiles.c.id, _profiles.c.name).where(_profiles.c.id == bindparam("profile_id"))
_REMOVE = _entries.delete().where(
    _entries.c.roster_id == bindparam("roster_id"), _entries.c.profile_id == bindparam("profile_id")
)


def _roster(row: Any) -> StoredRoster:
    return StoredRoster(row.id, row.owner_id, row.name, row.created_at, row.profiles, row.live_keys)


class SqlRosters:
    """Rosters, in SQL (SQLite's spelling of an insert that ignores a duplicate; PostgreSQL's: app/store/postgresql.py)."""

    def insert(self, owner_id: str, name: str, roster_id: str, at: datetime) -> StoredRoster:
        run(_rosters.insert().values(id=roster_id, owner_id=owner_id, name=name, created_at=at))
        return StoredRoster(roster_id, owner_id, name, at, 0, 0)

    def of_owner(self, owner_id: str) -> list[StoredRoster]:
        """A member's rosters by name, with their counts: one query."""
        return [_roster(row) for row in run(_OF_OWNER, {"owner_id": owner_id})]

    def by_id(self, roster_id: str) -> StoredRoster | None:
        row = run(_BY_ID, {"roster_id": roster_id}).first()
        return None if row is None else _roster(row)

    def delete(self, roster_id: str) -> None:
        """The roster and its profiles gone, and the keys that reached it (revoked by the caller first)
        detached: the statements the foreign keys' actions would run, written out because SQLite
        enforces no foreign key here."""
        run(_keys.update().where(_keys.c.roster_id == roster_id).values(roster_id=None))
        run(_entries.delete().where(_entries.c.roster_id == roster_id))
        run(_rosters.delete().where(_rosters.c.id == roster_id))

    def catalog_profile(self, profile_id: str) -> CatalogProfile | None:
        row = run(_PROFILE, {"profile_id": profile_id}).first()
        return None if row is None else CatalogProfile(row.id, row.name)

    def size(self, roster_id: str) -> int:
        return int(run(_COUNT, {"roster_id": roster_id}).scalar_one())

    def add(self, roster_id: str, profile_id: str, at: datetime) -> bool:
        """Put a profile on the roster; False when it already was (two submissions of one form)."""
        statement = sqlite_insert(_entries).values(roster_id=roster_id, profile_id=profile_id, added_at=at)
        return bool(run(statement.on_conflict_do_nothing()).rowcount)

    def remove(self, roster_id: str, profile_id: str) -> bool:
        """Take a profile off the roster; False when it was not on it."""
        return bool(run(_REMOVE, {"roster_id": roster_id, "profile_id": profile_id}).rowcount)

    def holds(self, roster_id: str, profile_id: str) -> bool:
        """Whether the profile is on the roster: the key door's reach check, by primary key."""
        return bool(run(_ON_ROSTER, {"roster_id": roster_id, "profile_id": profile_id}).scalar())

    def entries(self, roster_id: str) -> list[RosterEntry]:
        """Every profile on the roster, by name (a roster holds a bounded number)."""
        return [RosterEntry(*row) for row in run(_ENTRIES, {"roster_id": roster_id})]

    def profile_ids(self, roster_id: str, limit: int, offset: int) -> tuple[int, list[str]]:
        """A page of the roster's profile ids in the roster's order, and how many it holds."""
        total = self.size(roster_id)
        if offset >= total:
            return total, []
        rows = run(_PROFILE_IDS, {"roster_id": roster_id, "limit": limit, "offset": offset}).scalars()
        return total, list(rows)
