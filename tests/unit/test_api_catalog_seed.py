"""The demo catalog (deterministic and realistic), `flask demo seed`, and the member commands that
link a profile and change the membership."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

import pytest
from sqlalchemy import func, select, text

from app.core.extensions import db
from app.models import Album, ChartRow, Credit, CreditRole, Profile, Track, User, credit_role_links
from app.services.apikeys import live_key
from app.services.catalog_seed import ROLE_TAXONOMY, build_catalog, clear_catalog

CATALOG_TABLES = (
    "profiles",
    "albums",
    "tracks",
    "track_artists",
    "credit_roles",
    "credits",
    "credit_role_links",
    "chart_rows",
)


def snapshot() -> dict[str, list[tuple]]:
    with db.engine.connect() as conn:
        return {
            t: sorted(tuple(map(str, row)) for row in conn.execute(text(f"SELECT * FROM {t}"))) for t in CATALOG_TABLES
        }


def upc_is_valid(upc: str) -> bool:
    digits = [int(c) for c in upc]
    return (sum(d * (3 if i % 2 == 0 else 1) for i, d in enumerate(digits[:11])) + digits[11]) % 10 == 0


def test_the_same_seed_builds_the_same_catalog_and_another_seed_does_not():
    build_catalog(seed=11, credits=900)
    db.session.commit()  # the snapshots read through a connection of their own
    first = snapshot()
    clear_catalog()
    db.session.commit()
    assert all(not rows for rows in snapshot().values())
    build_catalog(seed=11, credits=900)
    db.session.commit()
    assert snapshot() == first
    clear_catalog()
    build_catalog(seed=12, credits=900)
    db.session.commit()
    assert snapshot()["profiles"] != first["profiles"]


def test_the_catalog_is_realistic():
    summary = build_catalog(seed=3, credits=2000)
    count = lambda model: db.session.scalar(select(func.count()).select_from(model))  # noqa: E731
    assert summary.credits == count(Credit) == 2000
    assert 300 <= count(Profile) == summary.profiles
    assert count(Track) >= 500 and count(Album) >= 40
    # The taxonomy: every family has its children; credits name specific roles only.
    families = db.session.scalars(select(CreditRole).where(CreditRole.parent_id.is_(None))).all()
    assert {f.name for f in families} == set(ROLE_TAXONOMY)
    linked = (
        db.session.execute(
            select(CreditRole.parent_id).join(credit_role_links, credit_role_links.c.role_id == CreditRole.id)
        )
        .scalars()
        .all()
    )
    assert linked and None not in linked
    uncredited = db.session.scalar(
        select(func.count()).select_from(Credit).where(~Credit.id.in_(select(credit_role_links.c.credit_id)))
    )
    assert uncredited == 0
    for track in db.session.scalars(select(Track).limit(200)):
        assert track.isrcs and all(re.fullmatch(r"[A-Z]{2}[A-Z0-9]{3}\d{7}", isrc) for isrc in track.isrcs)
        assert re.fullmatch(r"[0-9A-Za-z]{22}", track.spotify_id)
        assert track.artists
    for album in db.session.scalars(select(Album)):
        assert re.fullmatch(r"\d{12}", album.upc) and upc_is_valid(album.upc)
    # Credits carry their album's release date (the page order relies on it).
    mismatched = db.session.scalar(
        select(func.count()).select_from(Credit).join(Album).where(Album.release_date != Credit.release_date)
    )
    assert mismatched == 0
    # Charts: positions 1..n on each chart, shares add up to 100%, ranked by credits.
    charts = defaultdict(list)
    for row in db.session.scalars(select(ChartRow)):
        charts[row.chart_name].append(row)
    assert len(charts) == len(ROLE_TAXONOMY)
    for rows in charts.values():
        rows.sort(key=lambda r: r.position)
        assert [r.position for r in rows] == list(range(1, len(rows) + 1))
        assert sum(r.percentage for r in rows) == pytest.approx(100, abs=0.5)
        assert [r.credits_count for r in rows] == sorted((r.credits_count for r in rows), reverse=True)
    assert any(r.score_change is None for rows in charts.values() for r in rows)
    # A skewed spread: the busiest profile has far more credits than the median one.
    per_profile = sorted(Counter(db.session.scalars(select(Credit.profile_id))).values(), reverse=True)
    assert per_profile[0] >= 100 and per_profile[0] > 10 * per_profile[len(per_profile) // 2]


def run(app, *args):
    return app.test_cli_runner().invoke(args=list(args))


def test_demo_seed_builds_the_catalog_and_links_the_members(app):
    result = run(app, "demo", "seed", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["catalog"]["built"] is True and data["catalog"]["credits"] == 6000
    assert data["catalog"]["profiles"] >= 300
    members = {m["tier"]: m for m in data["members"]}
    assert set(members) == {"basic", "pro"}
    for member in members.values():
        assert {"email", "password", "tier", "profile_id"} <= set(member)
        credits = db.session.scalar(select(func.count()).where(Credit.profile_id == member["profile_id"]))
        assert credits >= 100, "enough credits to page through"
    assert db.session.scalar(select(func.count()).where(ChartRow.profile_id == members["pro"]["profile_id"]))
    assert {a["client_id"] for a in data["apps"]} == {"demo-web-app", "demo-native-app"}
    # A developer with a secret key that opens the catalog API.
    assert data["developer"]["api_key"].startswith("msk_")
    assert live_key(data["developer"]["api_key"]).owner.email == data["developer"]["email"]

    # Again: the catalog and the links are kept; the tier is restored.
    db.session.execute(db.update(User).values(tier="basic"))
    db.session.commit()
    again = json.loads(run(app, "demo", "seed", "--json").output)
    assert again["catalog"]["built"] is False and again["catalog"]["credits"] == 6000
    assert {m["tier"]: m["profile_id"] for m in again["members"]} == {t: m["profile_id"] for t, m in members.items()}
    # The same key, a new value: the old one stops.
    assert live_key(again["developer"]["api_key"]) is not None and live_key(data["developer"]["api_key"]) is None
    # The demo developer's account has its 100 of credits, once however often the seed runs.
    from decimal import Decimal

    from app.services.billing.ledger import account_for, balance

    developer = live_key(again["developer"]["api_key"]).owner
    assert balance(account_for(developer)) == Decimal("100.00")

    refused = run(app, "demo", "seed", "--seed", "5")
    assert refused.exit_code != 0 and "--rebuild" in refused.output
    rebuilt = json.loads(run(app, "demo", "seed", "--rebuild", "--seed", "5", "--credits", "700", "--json").output)
    assert rebuilt["catalog"] == {**rebuilt["catalog"], "built": True, "seed": 5, "credits": 700}
    assert all(m["profile_id"] for m in rebuilt["members"])


def test_users_create_links_an_existing_profile_only(app):
    build_catalog(seed=1, credits=300)
    profile_id = db.session.scalar(select(Profile.id).order_by(Profile.id))
    ok = run(
        app,
        "users",
        "create",
        "--email",
        "linked@example.test",
        "--name",
        "L",
        "--profile-id",
        profile_id.upper(),
        "--json",
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["profile_id"] == profile_id  # stored in canonical form
    for bad in ("not-a-uuid", "00000000-0000-4000-8000-000000000000"):
        result = run(app, "users", "create", "--email", f"x{len(bad)}@example.test", "--name", "X", "--profile-id", bad)
        assert result.exit_code != 0 and "profile" in result.output
    assert db.session.scalar(select(func.count()).select_from(User)) == 1
