"""Rosters: the rules for a member's named lists of the catalog profiles they represent.

Any member may keep rosters (an artists' manager, a label, a publisher): at most `MAX_ROSTERS`, each
named once and holding at most `MAX_PROFILES` profiles of the catalog. A roster is what a workspace
key reaches (`reaches`, asked by the key door on every request) and what the hosted widget shows
as a grid (`widget_roster`, `card_page`). Deleting a roster revokes its workspace keys first. Every
change leaves an audit event. Functions here only write through the store in the caller's
transaction: the page that calls them commits once."""

from __future__ import annotations

import uuid

from app.models import User
from app.models.base import new_uuid, utcnow
from app.services.apikeys import live_workspace_keys, revoke_key
from app.services.audit import record
from app.store import store
from app.store.rosters import CatalogProfile, RosterEntry
from app.store.rosters import StoredRoster as StoredRoster  # the record the pages read

MAX_ROSTERS = 20
MAX_PROFILES = 100  # a grid's worth of cards in five widget requests (app/web/api/widget.py)
MAX_NAME = 120


class RosterError(ValueError):
    """A roster change that cannot be made (bad name, a full roster, an unknown profile)."""


class RosterNotFound(LookupError):
    """No roster with that id among the member's."""


def canonical_id(value: str | None) -> str | None:
    """The lower-case hyphenated form of an id (a UUID: a profile's, a roster's), or None when it is not one."""
    text = (value or "").strip()
    if len(text) != 36:
        return None
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def rosters_of(owner: User) -> list[StoredRoster]:
    return store().rosters.of_owner(owner.id)


def member_roster(owner: User, roster_id: str) -> StoredRoster:
    """One of the member's rosters; any other id (someone else's, or none) is RosterNotFound."""
    canonical = canonical_id(roster_id)
    roster = store().rosters.by_id(canonical) if canonical else None
    if roster is None or roster.owner_id != owner.id:
        raise RosterNotFound(f"no roster with id {roster_id}")
    return roster


def create_roster(owner: User, name: str, actor: User | None = None) -> StoredRoster:
    name = " ".join((name or "").split())
    if not name or len(name) > MAX_NAME:
        raise RosterError(f"a roster needs a name of 1 to {MAX_NAME} characters")
    existing = store().rosters.of_owner(owner.id)
    if any(r.name.casefold() == name.casefold() for r in existing):
        raise RosterError(f"you already have a roster named {name}")
    if len(existing) >= MAX_ROSTERS:
        raise RosterError(f"you can keep at most {MAX_ROSTERS} rosters")
    roster = store().rosters.insert(owner.id, name, new_uuid(), utcnow())
    record("roster.created", actor=actor, roster_id=roster.id, name=name)
    return roster


def delete_roster(roster: StoredRoster, actor: User | None = None) -> int:
    """Delete the roster: its workspace keys are revoked (audited each), then it and its list go.
    Returns how many keys were revoked."""
    revoked = 0
    for key in live_workspace_keys(roster.id):
        revoked += revoke_key(key, actor=actor)
    store().rosters.delete(roster.id)
    record("roster.deleted", actor=actor, roster_id=roster.id, name=roster.name, keys_revoked=revoked)
    return revoked


def add_profile(roster: StoredRoster, profile_id: str, actor: User | None = None) -> CatalogProfile:
    """Put a catalog profile on the roster (already there: nothing changes). Returns the profile."""
    canonical = canonical_id(profile_id)
    profile = store().rosters.catalog_profile(canonical) if canonical else None
    if profile is None:
        raise RosterError("no profile with that id in the catalog")
    if store().rosters.holds(roster.id, profile.id):
        return profile
    if store().rosters.size(roster.id) >= MAX_PROFILES:
        raise RosterError(f"a roster holds at most {MAX_PROFILES} profiles")
    if store().rosters.add(roster.id, profile.id, utcnow()):
        record("roster.profile_added", actor=actor, roster_id=roster.id, profile_id=profile.id)
    return profile


def remove_profile(roster: StoredRoster, profile_id: str, actor: User | None = None) -> CatalogProfile | None:
    """Take a profile off the roster: its workspace keys stop reaching it from the next request.
    Returns the profile, or None when it was not on the roster."""
    canonical = canonical_id(profile_id)
    profile = store().rosters.catalog_profile(canonical) if canonical else None
    if profile is None or not store().rosters.remove(roster.id, profile.id):
        return None
    record("roster.profile_removed", actor=actor, roster_id=roster.id, profile_id=profile.id)
    return profile


def entries(roster: StoredRoster) -> list[RosterEntry]:
    return store().rosters.entries(roster.id)


def reaches(roster_id: str | None, profile_id: str | None) -> bool:
    """Whether a workspace key on `roster_id` reaches `profile_id` (as a path names it): the
    profile is on the roster now. One lookup by primary key."""
    canonical = canonical_id(profile_id)
    return bool(roster_id and canonical and store().rosters.holds(roster_id, canonical))


def widget_roster(roster_id: str, owner_id: str) -> StoredRoster | None:
    """The roster a widget asks for with a key of `owner_id`: only the owner's own keys show it
    (another member's key, or no such roster: None, which the widget API answers 404)."""
    canonical = canonical_id(roster_id)
    roster = store().rosters.by_id(canonical) if canonical else None
    return roster if roster is not None and roster.owner_id == owner_id else None


def card_page(roster: StoredRoster, limit: int, offset: int) -> tuple[int, list[str]]:
    """A page of the roster's profile ids in its order (by name), and how many it holds."""
    return store().rosters.profile_ids(roster.id, limit, offset)
