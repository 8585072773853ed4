"""Rows and tokens the data-API tests need: a small hand-made catalog whose every value is known,
access tokens minted straight into the token table (as the token endpoint stores them: by hash),
and a query counter."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta

from sqlalchemy import event

from app.core.extensions import db
from app.models import Album, ChartRow, Credit, CreditRole, Profile, Token, Track, TrackArtist, credit_role_links
from app.models.base import new_secret, new_uuid, sha256_hex, utcnow
from app.store import store
from app.store.catalog_database import catalog_engine
from tests.factories import make_client, make_member

ALL_SCOPES = "openid profile email credits:read analytics:read"


def uid(n: int, kind: int = 0) -> str:
    """Readable fixed UUIDs: kind 1 profiles, 2 tracks, 3 albums."""
    return str(uuid.UUID(int=(kind << 64) | n, version=4))


@dataclass
class Catalog:
    mine: str  # the member's profile
    other: str  # someone else's profile (a collaborator)
    credits: int  # how many credits `mine` has
    newest_first: list[tuple[str, str]] = field(default_factory=list)  # (track id, album id) in page order


def make_catalog(credits: int = 45) -> Catalog:
    """Two profiles; `mine` has `credits` credit rows on distinct tracks, with release dates that
    repeat (so the id must break ties), two roles on every third credit, two artists on every
    fifth track, and chart rows (one without scoreChange). `other` has 3 credits and a chart row."""
    db.session.add_all([CreditRole(id=1, name="Producer"), CreditRole(id=2, name="Songwriter")])
    db.session.flush()
    db.session.add_all(
        [
            CreditRole(id=3, name="Co-Producer", parent_id=1),
            CreditRole(id=4, name="Composer", parent_id=2),
            CreditRole(id=5, name="Lyricist", parent_id=2),
        ]
    )
    mine, other = uid(1, 1), uid(2, 1)
    db.session.add_all(
        [
            Profile(
                id=mine,
                name="Ada Mine",
                city="Stockholm",
                country="Sweden",
                bio="Producer.",
                website=None,
                facebook=None,
                twitter="https://twitter.com/ada",
                instagram=None,
                spotify_id="abc",
                avatar_url="https://images.credits.example/profiles/ada.jpg",
            ),
            Profile(id=other, name="Otto Other", avatar_url=None),
        ]
    )
    db.session.flush()
    base = date(2020, 1, 1)
    order = []
    for n in range(credits + 3):
        track_id, album_id = uid(n + 1, 2), uid(n + 1, 3)
        released = base + timedelta(days=n // 2)  # two credits per date: the id breaks the tie
        db.session.add(
            Album(
                id=album_id,
                title=f"Album {n}",
                album_art=f"https://images.credits.example/a/{n}.jpg",
                upc=f"{n:012d}",
                label="Label",
                release_date=released,
            )
        )
        db.session.add(
            Track(
                id=track_id,
                title=f"Track {n}",
                popularity=n % 100,
                isrcs=[f"USAAA20{n:05d}"],
                spotify_id=f"sp{n}",
                spotify_preview_url=f"https://audio.credits.example/{n}.mp3",
                label="Label",
            )
        )
        db.session.flush()
        db.session.add(TrackArtist(track_id=track_id, position=0, profile_id=mine if n % 2 else other))
        if n % 5 == 0:
            db.session.add(TrackArtist(track_id=track_id, position=1, profile_id=other if n % 2 else mine))
        owner = mine if n < credits else other
        credit = Credit(id=n + 1, profile_id=owner, track_id=track_id, album_id=album_id, release_date=released)
        db.session.add(credit)
        db.session.flush()
        roles = [3, 4] if n % 3 == 0 else [5]
        db.session.execute(credit_role_links.insert(), [{"credit_id": n + 1, "role_id": r} for r in roles])
        if owner == mine:
            order.append((n + 1, released, track_id, album_id))
    db.session.add_all(
        [
            ChartRow(
                profile_id=mine,
                chart_name="Top Producers",
                position=3,
                position_change=-1,
                score=900,
                score_change=25,
                credits_count=20,
                percentage=1.5,
            ),
            ChartRow(
                profile_id=mine,
                chart_name="Top Songwriters",
                position=12,
                position_change=4,
                score=400,
                score_change=None,
                credits_count=30,
                percentage=0.25,
            ),
            ChartRow(
                profile_id=other,
                chart_name="Top Producers",
                position=1,
                position_change=0,
                score=5000,
                score_change=10,
                credits_count=3,
                percentage=9.0,
            ),
        ]
    )
    db.session.flush()
    store().catalog.refresh_profile_stats()  # as every load does: search shows these figures
    db.session.commit()
    order.sort(key=lambda row: (row[1], row[0]), reverse=True)
    return Catalog(mine=mine, other=other, credits=credits, newest_first=[(t, a) for _, _, t, a in order])


def mint_token(
    user, client, scope: str = ALL_SCOPES, lifetime: int = 3600, revoked: bool = False, grant_id: str | None = None
) -> str:
    """An access token stored the way the token endpoint stores one (in a new grant, or in
    `grant_id`'s, as a refresh would); returns the raw value."""
    value = new_secret(32)
    now = utcnow()
    db.session.add(
        Token(
            client_id=client.id,
            user_id=user.id,
            grant_id=grant_id or new_uuid(),
            scope=scope,
            access_token_hash=sha256_hex(value),
            issued_at=now - timedelta(seconds=10),
            access_expires_at=now + timedelta(seconds=lifetime),
            auth_time=now,
            revoked_at=now if revoked else None,
        )
    )
    db.session.commit()
    return value


def member_with_token(tier: str = "pro", profile_id: str | None = None, scope: str = ALL_SCOPES):
    user = make_member(tier=tier, profile_id=profile_id)
    client, _ = make_client()
    return user, client, mint_token(user, client, scope)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def database_engines() -> list:
    """The app's engines: the main one, and the catalog's own when it has one (CATALOG_DATABASE_URL)."""
    return [db.engine, *filter(None, [catalog_engine()])]


@contextmanager
def count_queries():
    """Every SQL statement the app sends while the block runs."""
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    engines = database_engines()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)
