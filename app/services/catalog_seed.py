"""A realistic, deterministic demo catalog: the same seed always builds the same rows.

Profiles, albums with UPCs, tracks with ISRCs and Spotify-style ids, a two-level role taxonomy,
credits (who held which roles on which track of which album) and per-profile chart rows. Every
value comes from one `random.Random(seed)`, ids included, so two runs with the same seed and
size produce identical catalogs (tests and benchmarks can name rows by id).

Sizes scale with the number of credits asked for; rows are written with bulk INSERTs in
batches, so a catalog of 100k+ credits builds in seconds. Credits are spread over profiles
with a Zipf-like skew, as in real catalogs: a few prolific producers and writers, a long tail.

Building and clearing join the caller's transaction and never commit: `flask demo seed` (or a
benchmark's set-up) commits once, so a rebuild replaces the catalog whole or not at all.
"""

from __future__ import annotations

import hashlib
import random
import string
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import accumulate
from typing import Any

from sqlalchemy import delete, func, insert, select, update

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
    User,
    credit_role_links,
)
from app.store import store

DEFAULT_SEED = 20261123
DEFAULT_CREDITS = 6000
BATCH = 5000

# The role taxonomy: family -> specific roles (a credit names specific roles).
ROLE_TAXONOMY: dict[str, tuple[str, ...]] = {
    "Artist": ("Primary Artist", "Featured Artist"),
    "Songwriter": ("Songwriter", "Composer", "Lyricist"),
    "Producer": ("Producer", "Co-Producer", "Executive Producer", "Additional Production", "Vocal Producer"),
    "Engineer": ("Recording Engineer", "Mixing Engineer", "Mastering Engineer", "Assistant Engineer"),
    "Performer": (
        "Vocals",
        "Background Vocals",
        "Guitar",
        "Bass",
        "Drums",
        "Keyboards",
        "Piano",
        "Strings",
        "Saxophone",
        "Trumpet",
        "Synthesizer",
        "Percussion",
        "Programming",
    ),
}
# The chart each family ranks on (a profile appears on the charts of the families it is credited in).
CHARTS = {
    "Artist": "Top Artists",
    "Songwriter": "Top Songwriters",
    "Producer": "Top Producers",
    "Engineer": "Top Engineers",
    "Performer": "Top Session Musicians",
}

FIRST = (
    "Ava",
    "Ben",
    "Cleo",
    "Dante",
    "Elif",
    "Femi",
    "Greta",
    "Hugo",
    "Ines",
    "Jonah",
    "Kai",
    "Lena",
    "Milo",
    "Nora",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tess",
    "Uma",
    "Viktor",
    "Wren",
    "Xavi",
    "Yara",
    "Zane",
    "Amara",
    "Bruno",
    "Chiara",
    "Dev",
    "Esme",
    "Felix",
    "Hana",
    "Ivo",
    "Juno",
    "Leon",
    "Maya",
    "Nico",
    "Otto",
    "Pia",
    "Rafa",
    "Sol",
    "Theo",
    "Vera",
    "Yusuf",
    "Zoe",
)
LAST = (
    "Adeyemi",
    "Berg",
    "Castillo",
    "Dahl",
    "Eriksen",
    "Fontaine",
    "Garcia",
    "Haddad",
    "Ito",
    "Jansen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quint",
    "Rossi",
    "Silva",
    "Takahashi",
    "Underwood",
    "Varga",
    "Walsh",
    "Xu",
    "Yilmaz",
    "Zimmer",
    "Alvarez",
    "Brooks",
    "Costa",
    "Duarte",
    "Evans",
    "Fischer",
    "Hughes",
    "Kim",
    "Larsen",
    "Mendes",
    "Novak",
    "Park",
    "Reyes",
    "Stone",
    "Vance",
    "Weber",
)
ACT_WORDS = (
    "Velvet",
    "Neon",
    "Paper",
    "Golden",
    "Quiet",
    "Electric",
    "Midnight",
    "Static",
    "Lunar",
    "Wild",
    "Glass",
    "Hollow",
    "Crimson",
    "Silver",
    "Northern",
    "Tidal",
    "Echo",
    "Analog",
    "Saint",
    "Ivory",
)
ACT_NOUNS = (
    "Harbors",
    "Engines",
    "Foxes",
    "Tides",
    "Satellites",
    "Gardens",
    "Ghosts",
    "Rivers",
    "Lanterns",
    "Parade",
    "Season",
    "Assembly",
    "Machines",
    "Choir",
    "Club",
    "Society",
)
CITIES = (
    ("Los Angeles", "United States"),
    ("Nashville", "United States"),
    ("New York", "United States"),
    ("Atlanta", "United States"),
    ("London", "United Kingdom"),
    ("Manchester", "United Kingdom"),
    ("Stockholm", "Sweden"),
    ("Berlin", "Germany"),
    ("Paris", "France"),
    ("Lagos", "Nigeria"),
    ("Toronto", "Canada"),
    ("Seoul", "South Korea"),
    ("Tokyo", "Japan"),
    ("Sao Paulo", "Brazil"),
    ("Mexico City", "Mexico"),
    ("Melbourne", "Australia"),
    ("Amsterdam", "Netherlands"),
    ("Kingston", "Jamaica"),
    ("Reykjavik", "Iceland"),
    ("Madrid", "Spain"),
)
TITLE_A = (
    "Love",
    "Night",
    "Summer",
    "Fire",
    "Gravity",
    "Paper",
    "Heart",
    "Ocean",
    "Silence",
    "Highway",
    "Neon",
    "Winter",
    "Golden",
    "Broken",
    "Electric",
    "Slow",
    "Satellite",
    "Honey",
    "Midnight",
    "Wildflower",
)
TITLE_B = (
    "Lights",
    "Drive",
    "Again",
    "Hours",
    "Letters",
    "Dreams",
    "Sky",
    "Motion",
    "Lines",
    "Rain",
    "Talk",
    "Forever",
    "Streets",
    "Echoes",
    "Signals",
    "Roses",
    "Waves",
    "Crown",
    "Home",
    "Fever",
)
LABELS = (
    "Northbound Records",
    "Blue Lantern Music",
    "Harbor Sound",
    "Meridian Recordings",
    "Paper Moon Label",
    "Static Bloom",
    "Eastgate Music Group",
    "Little Orbit",
    "Sunday Tapes",
    "Crescent Audio",
)
ISRC_COUNTRIES = ("US", "GB", "SE", "DE", "FR", "NG", "CA", "KR", "JP", "BR")
BASE62 = string.digits + string.ascii_letters
IMAGES = "https://images.credits.example"
AUDIO = "https://audio.credits.example"


@dataclass
class CatalogSummary:
    seed: int | None  # None: a catalog that was already there (its seed is not recorded)
    profiles: int = 0
    albums: int = 0
    tracks: int = 0
    credits: int = 0
    chart_rows: int = 0
    roles: int = 0
    built: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in ("seed", "built", "profiles", "albums", "tracks", "credits", "chart_rows", "roles")
        }


class _Ids:
    """Deterministic UUIDs (version 4 layout) drawn from the catalog's random stream."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def __call__(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))


def _sizes(credits: int) -> tuple[int, int, int]:
    """Profiles, tracks and albums for a catalog of about `credits` credit rows."""
    profiles = max(300, credits // 15)
    tracks = max(200, credits // 4)
    albums = max(40, tracks // 8)
    return profiles, tracks, albums


def _spotify_id(rng: random.Random) -> str:
    return "".join(rng.choices(BASE62, k=22))


def _derived_spotify_id(row_id: str) -> str:
    """A Spotify-style id derived from a row id (not drawn from the random stream, so adding it
    left every other seeded value as it was)."""
    number = int.from_bytes(hashlib.sha256(row_id.encode()).digest()[:17], "big")
    chars = []
    for _ in range(22):
        number, digit = divmod(number, 62)
        chars.append(BASE62[digit])
    return "".join(chars)


def _upc(rng: random.Random) -> str:
    """A 12-digit UPC-A with a valid check digit."""
    digits = [rng.randrange(10) for _ in range(11)]
    check = (10 - (sum(d * (3 if i % 2 == 0 else 1) for i, d in enumerate(digits)) % 10)) % 10
    return "".join(map(str, digits)) + str(check)


def _isrc(rng: random.Random, year: int) -> str:
    """CC-XXX-YY-NNNNN without the dashes, as stored by registries."""
    registrant = "".join(rng.choices(string.ascii_uppercase + string.digits, k=3))
    return f"{rng.choice(ISRC_COUNTRIES)}{registrant}{year % 100:02d}{rng.randrange(100000):05d}"


def _handle(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def _profile_rows(rng: random.Random, new_id: _Ids, count: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in range(count):
        if rng.random() < 0.2:
            name = f"{rng.choice(ACT_WORDS)} {rng.choice(ACT_NOUNS)}"
        else:
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if any(r["name"] == name for r in rows[-50:]):
            name = f"{name} {n}"  # keep neighbouring names distinct for readability
        pid = new_id()
        city, country = rng.choice(CITIES) if rng.random() < 0.85 else (None, None)
        handle = _handle(name)
        social = rng.random()
        rows.append(
            {
                "id": pid,
                "name": name,
                "city": city,
                "country": country,
                "bio": (
                    f"{name} is a {rng.choice(('songwriter', 'producer', 'engineer', 'multi-instrumentalist', 'artist'))}"
                    f"{f' based in {city}' if city else ''}."
                )
                if rng.random() < 0.7
                else None,
                "website": f"https://{handle}.example" if social < 0.5 else None,
                "facebook": f"https://facebook.com/{handle}" if social < 0.4 else None,
                "twitter": f"https://twitter.com/{handle}" if social < 0.6 else None,
                "instagram": f"https://instagram.com/{handle}" if social < 0.75 else None,
                "spotify_id": _spotify_id(rng) if rng.random() < 0.8 else None,
                "avatar_url": f"{IMAGES}/profiles/{pid}.jpg" if rng.random() < 0.9 else None,
            }
        )
    return rows


def _album_rows(rng: random.Random, new_id: _Ids, count: int) -> list[dict[str, Any]]:
    start = date(1990, 1, 1)
    span = (date(2026, 10, 31) - start).days
    rows = []
    for _ in range(count):
        aid = new_id()
        rows.append(
            {
                "id": aid,
                "title": f"{rng.choice(TITLE_A)} {rng.choice(TITLE_B)}",
                "album_art": f"{IMAGES}/albums/{aid}.jpg",
                "upc": _upc(rng),
                "label": rng.choice(LABELS),
                "release_date": start + timedelta(days=rng.randrange(span)),
            }
        )
    return rows


def build_catalog(seed: int = DEFAULT_SEED, credits: int = DEFAULT_CREDITS) -> CatalogSummary:
    """Write a fresh catalog (the caller makes sure the catalog tables are empty, and commits)."""
    rng = random.Random(seed)  # noqa: S311 - demo data must be reproducible, not secret
    new_id = _Ids(rng)
    n_profiles, n_tracks, n_albums = _sizes(credits)
    summary = CatalogSummary(seed=seed)

    # Roles: families first, then their specific roles; ids are fixed by the taxonomy's order.
    role_rows, specific_roles, family_of = [], [], {}
    next_id = 1
    for family, children in ROLE_TAXONOMY.items():
        family_id = next_id
        role_rows.append({"id": family_id, "name": family, "parent_id": None})
        next_id += 1
        for child in children:
            role_rows.append({"id": next_id, "name": child, "parent_id": family_id})
            specific_roles.append(next_id)
            family_of[next_id] = family
            next_id += 1
    roles_by_family = defaultdict(list)
    for role_id, family in family_of.items():
        roles_by_family[family].append(role_id)

    profiles = _profile_rows(rng, new_id, n_profiles)
    albums = _album_rows(rng, new_id, n_albums)
    profile_ids = [p["id"] for p in profiles]
    # Zipf-like weights: profile k gets weight 1/(k+1)^0.9 (a few prolific, a long tail).
    cumulative = list(accumulate(1.0 / (k + 1) ** 0.9 for k in range(n_profiles)))

    def pick_profiles(k: int) -> list[str]:
        chosen: dict[str, None] = {}
        while len(chosen) < k:
            chosen[rng.choices(profile_ids, cum_weights=cumulative)[0]] = None
        return list(chosen)

    tracks, track_artists, track_albums = [], [], []
    for _ in range(n_tracks):
        tid = new_id()
        album = rng.choice(albums)
        year = album["release_date"].year
        isrcs = [_isrc(rng, year)] + ([_isrc(rng, year)] if rng.random() < 0.1 else [])
        tracks.append(
            {
                "id": tid,
                "title": f"{rng.choice(TITLE_A)} {rng.choice(TITLE_B)}",
                "popularity": int(rng.triangular(0, 100, 35)),
                "isrcs": isrcs,
                "spotify_id": _spotify_id(rng),
                "spotify_preview_url": f"{AUDIO}/previews/{tid}.mp3",
                "label": album["label"],
            }
        )
        on_albums = [album] + ([rng.choice(albums)] if rng.random() < 0.15 else [])
        track_albums.append([a for i, a in enumerate(on_albums) if a not in on_albums[:i]])
        for position, artist in enumerate(pick_profiles(1 if rng.random() < 0.8 else 2)):
            track_artists.append({"track_id": tid, "position": position, "profile_id": artist})

    # Credits: each (track, album) appearance credits the track's artists plus a crew drawn
    # from the whole catalog, until the requested number of credit rows is reached.
    artists_of = defaultdict(list)
    for row in track_artists:
        artists_of[row["track_id"]].append(row["profile_id"])
    credit_rows: list[dict[str, Any]] = []
    link_rows: list[dict[str, Any]] = []
    seen: set[Any] = set()
    family_counts: dict[str, Counter[Any]] = defaultdict(Counter)
    credit_id = 0
    appearances = [(t, a) for t, on in zip(tracks, track_albums, strict=True) for a in on]
    while len(credit_rows) < credits:
        track, album = rng.choice(appearances)
        crew = [(p, "Artist") for p in artists_of[track["id"]]]
        crew += [
            (p, rng.choice(("Songwriter", "Producer", "Engineer", "Performer", "Songwriter", "Producer")))
            for p in pick_profiles(rng.randint(1, 4))
        ]
        for profile_id, family in crew:
            key = (profile_id, track["id"], album["id"])
            if key in seen or len(credit_rows) >= credits:
                continue
            seen.add(key)
            credit_id += 1
            credit_rows.append(
                {
                    "id": credit_id,
                    "profile_id": profile_id,
                    "track_id": track["id"],
                    "album_id": album["id"],
                    "release_date": album["release_date"],
                }
            )
            held = {rng.choice(roles_by_family[family])}
            if family != "Artist" and rng.random() < 0.35:
                held.add(rng.choice(specific_roles))  # e.g. a producer who also played keys
            for role_id in sorted(held):
                link_rows.append({"credit_id": credit_id, "role_id": role_id})
                family_counts[family_of[role_id]][profile_id] += 1

    chart_rows: list[dict[str, Any]] = []
    for family, counts in family_counts.items():
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        for position, (profile_id, count) in enumerate(ranked, start=1):
            score = count * 100 + rng.randrange(100)
            chart_rows.append(
                {
                    "id": len(chart_rows) + 1,
                    "profile_id": profile_id,
                    "chart_name": CHARTS[family],
                    "position": position,
                    "position_change": rng.randint(-10, 10),
                    "score": score,
                    "score_change": rng.randint(-500, 500) if rng.random() < 0.8 else None,
                    "credits_count": count,
                    "percentage": round(100.0 * count / total, 3),
                }
            )

    # The catalog API's lookups: each track's ISRCs indexed, each album's Spotify id and popularity
    # (its most popular credited track's).
    isrc_rows = [{"isrc": isrc, "track_id": t["id"]} for t in tracks for isrc in dict.fromkeys(t["isrcs"])]
    popularity: dict[Any, int] = {t["id"]: t["popularity"] for t in tracks}
    album_popularity: dict[Any, int] = {}
    for row in credit_rows:
        album_popularity[row["album_id"]] = max(album_popularity.get(row["album_id"], 0), popularity[row["track_id"]])
    for album in albums:
        album["spotify_id"] = _derived_spotify_id(album["id"])
        album["popularity"] = album_popularity.get(album["id"], 0)

    for model_or_table, rows in (
        (CreditRole, role_rows),
        (Profile, profiles),
        (Album, albums),
        (Track, tracks),
        (TrackIsrc, isrc_rows),
        (TrackArtist, track_artists),
        (Credit, credit_rows),
        (credit_role_links, link_rows),
        (ChartRow, chart_rows),
    ):
        table = getattr(model_or_table, "__table__", model_or_table)
        for start in range(0, len(rows), BATCH):
            db.session.execute(insert(table), rows[start : start + BATCH])
    store().catalog.sync_ids()
    store().catalog.refresh_profile_stats()

    summary.profiles, summary.albums, summary.tracks = len(profiles), len(albums), len(tracks)
    summary.credits, summary.chart_rows, summary.roles = len(credit_rows), len(chart_rows), len(role_rows)
    return summary


class CatalogExists(RuntimeError):
    """A catalog is already there and was not asked to be replaced."""


def ensure_catalog(seed: int | None = None, credits: int | None = None, rebuild: bool = False) -> CatalogSummary:
    """Build the demo catalog when there is none (or `rebuild`); otherwise keep the one there.
    The caller commits."""
    if not catalog_is_empty():
        if not rebuild:
            if seed is not None or credits is not None:
                raise CatalogExists("a catalog exists already; add --rebuild to replace it")
            return existing_summary()
        clear_catalog()
    return build_catalog(DEFAULT_SEED if seed is None else seed, DEFAULT_CREDITS if credits is None else credits)


def existing_summary() -> CatalogSummary:
    def count(model: Any) -> int:
        return db.session.scalar(select(func.count()).select_from(model)) or 0

    return CatalogSummary(
        seed=None,
        built=False,
        profiles=count(Profile),
        albums=count(Album),
        tracks=count(Track),
        credits=count(Credit),
        chart_rows=count(ChartRow),
        roles=count(CreditRole),
    )


def catalog_is_empty() -> bool:
    return not db.session.scalar(select(func.count()).select_from(Profile))


def clear_catalog() -> None:
    """Remove every catalog row; members keep their accounts but lose their profile link. The
    caller commits."""
    db.session.execute(update(User).where(User.profile_id.is_not(None)).values(profile_id=None))
    for table in (
        credit_role_links,
        Credit.__table__,
        ChartRow.__table__,
        TrackArtist.__table__,
        TrackIsrc.__table__,
        Track.__table__,
        Album.__table__,
        Profile.__table__,
    ):
        db.session.execute(delete(table))
    db.session.execute(update(CreditRole).values(parent_id=None))
    db.session.execute(delete(CreditRole.__table__))


def profiles_by_credit_count(limit: int) -> list[str]:
    """The most-credited profiles (ties by id): the demo members are linked to these."""
    count = func.count(Credit.id)
    rows = db.session.execute(
        select(Credit.profile_id, count)
        .group_by(Credit.profile_id)
        .order_by(count.desc(), Credit.profile_id)
        .limit(limit)
    ).all()
    return [row[0] for row in rows]
