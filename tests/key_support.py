"""API keys and catalog lookups for the key-door tests: keys made through the service (as the
console and the CLI make them), and the catalog of tests/api_support.py with its ISRC index and
album Spotify ids filled in (as the demo seed writes them)."""

from __future__ import annotations

from sqlalchemy import select

from app.core.extensions import db
from app.models import Album, Role, Track, TrackIsrc
from app.services.apikeys import create_key
from tests.factories import make_member


def make_developer(role: str = Role.DEVELOPER, **kw):
    return make_member(role=role, **kw)


def fund(owner, amount: str = "1000.00", memo: str = "Test credits") -> None:
    """Put `amount` on the owner's prepaid balance (an operator's adjustment, committed): a key of an
    account without credits is refused with 402 (app/services/billing/standing.py)."""
    from decimal import Decimal

    from app.services.billing.ledger import account_for, adjust

    adjust(account_for(owner), Decimal(amount), memo)
    db.session.commit()


def opened_on(owner, day) -> None:
    """Date the owner's billing account back to `day` (UTC): an account is billed for the calls made
    from the day it was opened (app/services/billing/posting.py), so a test of past days needs one."""
    from datetime import UTC, datetime, time

    from app.services.billing.ledger import account_for
    from app.store import store

    store().billing.change(account_for(owner).id, {"created_at": datetime.combine(day, time(), UTC)})
    db.session.commit()


def make_key(
    kind: str = "secret",
    plan: str = "payg",
    domains: list[str] | None = None,
    owner=None,
    name: str = "Test key",
    funded: bool = True,
):
    """A committed key and its value; its owner's account funded with 1,000 unless `funded` is False
    (a second key of an already funded owner adds nothing)."""
    owner = owner or make_developer()
    if funded:
        from app.services.billing.ledger import account_for, balance

        if balance(account_for(owner)) <= 0:
            fund(owner)
    key, value = create_key(
        owner, name, kind, plan, domains or ([] if kind == "secret" else ["widgets.example"]), actor=owner
    )
    db.session.commit()
    return key, value


def index_catalog() -> None:
    """Fill the lookups the catalog API reads: one ISRC row per track ISRC, a Spotify id per album."""
    for track in db.session.scalars(select(Track)):
        for isrc in track.isrcs or []:
            db.session.add(TrackIsrc(isrc=isrc, track_id=track.id))
    for n, album in enumerate(db.session.scalars(select(Album).order_by(Album.id))):
        album.spotify_id = f"alb{n}"
    db.session.commit()


def key_header(value: str, **extra: str) -> dict[str, str]:
    return {"x-api-key": value, **extra}


def make_roster(owner=None, profiles: tuple[str, ...] = (), name: str = "Our artists"):
    """A committed roster of `owner` (a plain member by default) holding `profiles`, made through
    the service as the account page makes it."""
    from app.services.rosters import add_profile, create_roster, member_roster

    owner = owner or make_member()
    roster = create_roster(owner, name, actor=owner)
    for profile_id in profiles:
        add_profile(roster, profile_id, actor=owner)
    db.session.commit()
    return member_roster(owner, roster.id)


def make_workspace_key(roster, owner=None, name: str = "Label dashboard"):
    """A committed workspace key on `roster` and its value."""
    from app.models import User
    from app.services.apikeys import create_workspace_key

    owner = owner or db.session.get(User, roster.owner_id)
    key, value = create_workspace_key(owner, roster, name, actor=owner)
    db.session.commit()
    return key, value
