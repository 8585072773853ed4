"""A catalog at a real platform's size, on demand: `flask catalog generate` (issue 47).

Deterministic: every value comes from one `random.Random(seed)`, so a seed and the four sizes name
one catalog, row for row, on either store. Realistic where search and paging feel it:

- names: people with accented names (Beyoncé, Zoë Ólafsdóttir, Łukasz Nuñez), stage names (DJ, MC,
  Lil), bands ("The Velvet Owls"); the same name held by several profiles;
- titles from a few hundred common words, so "Love" or "Night" matches tens of thousands of tracks
  and some titles recur (a hundred songs called "Home"), with "(feat. …)", "- Remix", "(Live)";
- popularity skewed: most tracks near zero, a few near 100; credits spread over profiles by a
  Zipf-like law (a few profiles hold thousands of credits, most a handful);
- charts: each role family's 200 most credited profiles, ranked.

Rows are generated in chunks of tracks and handed to the store's bulk loader (PostgreSQL: COPY into
tables whose secondary indexes and foreign keys are set aside and rebuilt after; SQLite: batched
inserts). The profile figures search shows are computed once at the end. Generation joins the
caller's transaction; the command commits once.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from itertools import accumulate

from app.models.catalog import SEARCH_KEY_LENGTH, fold
from app.services.catalog_seed import (
    AUDIO,
    BASE62,
    CHARTS,
    CITIES,
    IMAGES,
    ISRC_COUNTRIES,
    LABELS,
    ROLE_TAXONOMY,
    catalog_is_empty,
)
from app.store import store

DEFAULT_SEED = 47
FULL = {"tracks": 1_000_000, "profiles": 250_000, "albums": 150_000, "credits": 5_000_000}
CHUNK = 20_000  # tracks per chunk (and the credits that come with them)
CHART_DEPTH = 200

FIRST = (
    "Beyoncé",
    "Zoë",
    "José",
    "Chloé",
    "Renée",
    "Søren",
    "Ólafur",
    "Sinéad",
    "François",
    "Łukasz",
    "Zoltán",
    "Ana",
    "Ben",
    "Carlos",
    "Dana",
    "Elif",
    "Femi",
    "Greta",
    "Hugo",
    "Inés",
    "Jonah",
    "Kai",
    "Lena",
    "Mateo",
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
    "Yara",
    "Zane",
    "Amara",
    "Bruno",
    "Chiara",
    "Dev",
    "Esmé",
    "Félix",
    "Hana",
    "Ivo",
    "Juno",
    "León",
    "Maya",
    "Nico",
    "Otto",
    "Pia",
    "Rafa",
    "Sol",
    "Théo",
    "Vera",
    "Yusuf",
    "John",
    "Michael",
    "David",
    "James",
    "Sarah",
    "Emma",
    "Olivia",
    "Noah",
    "Liam",
    "Lucía",
    "Björn",
    "Agnès",
    "Małgorzata",
    "Dominik",
    "Anaïs",
    "Jürgen",
    "Aoife",
    "Ciarán",
)
LAST = (
    "García",
    "Müller",
    "Núñez",
    "Øvergaard",
    "Ólafsdóttir",
    "Dvořák",
    "Šimůnek",
    "Lefèvre",
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Miller",
    "Davis",
    "Martínez",
    "Hernández",
    "López",
    "Adeyemi",
    "Berg",
    "Castillo",
    "Dahl",
    "Eriksen",
    "Fontaine",
    "Haddad",
    "Ito",
    "Jansen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quintero",
    "Rossi",
    "Sato",
    "Tanaka",
    "Urban",
    "Vargas",
    "Weber",
    "Young",
    "Zhang",
    "O'Brien",
    "D'Angelo",
    "Møller",
    "Söderberg",
    "Çelik",
    "Yılmaz",
    "Nowak",
    "Knowles",
    "Carter",
)
STAGE = ("DJ", "MC", "Lil", "Young", "Big", "King", "Queen", "Sir", "Dr.", "Baby")
BAND_ADJ = (
    "Velvet",
    "Electric",
    "Golden",
    "Silent",
    "Midnight",
    "Broken",
    "Crimson",
    "Wild",
    "Neon",
    "Black",
    "Blue",
    "Little",
    "Lost",
    "Sonic",
    "Cosmic",
    "Royal",
    "Holy",
    "Paper",
    "Glass",
    "Arctic",
)
BAND_NOUN = (
    "Owls",
    "Tigers",
    "Kings",
    "Ghosts",
    "Rivers",
    "Wolves",
    "Hearts",
    "Machines",
    "Strangers",
    "Lions",
    "Monkeys",
    "Dreams",
    "Angels",
    "Horses",
    "Shadows",
    "Lights",
    "Keys",
    "Stones",
    "Saints",
    "Foxes",
)
WORDS = (
    "Love",
    "Night",
    "Heart",
    "Baby",
    "Fire",
    "Dance",
    "Crazy",
    "Home",
    "Dream",
    "Summer",
    "Girl",
    "Time",
    "World",
    "Light",
    "Life",
    "Rain",
    "Sun",
    "Moon",
    "Star",
    "Blue",
    "Gold",
    "Wild",
    "Free",
    "Young",
    "Forever",
    "Tonight",
    "Yesterday",
    "Tomorrow",
    "Alone",
    "Together",
    "Falling",
    "Running",
    "Burning",
    "Dancing",
    "Lonely",
    "Sweet",
    "Bitter",
    "Dark",
    "Bright",
    "Electric",
    "Midnight",
    "Paradise",
    "Heaven",
    "Angel",
    "Devil",
    "River",
    "Ocean",
    "City",
    "Road",
    "Highway",
    "Train",
    "Money",
    "Power",
    "Glory",
    "Honey",
    "Sugar",
    "Kiss",
    "Touch",
    "Feel",
    "Soul",
    "Body",
    "Mind",
    "Eyes",
    "Hands",
    "Voice",
    "Song",
    "Music",
    "Rhythm",
    "Beat",
    "Party",
    "Club",
    "Street",
    "Boulevard",
    "Avenue",
    "Champagne",
    "Diamond",
    "Silver",
    "Velvet",
    "Thunder",
    "Storm",
    "Winter",
    "Autumn",
    "Spring",
    "Morning",
    "Evening",
    "Sunset",
    "Sunrise",
    "Shadow",
    "Ghost",
    "Memory",
    "Promise",
    "Secret",
    "Story",
    "Dreamer",
    "Lover",
    "Stranger",
    "Hero",
    "Rebel",
    "Canción",
    "Corazón",
    "Amor",
    "Noche",
    "Café",
    "Señorita",
    "Déjà Vu",
    "Über",
    "Fiancé",
    "Naïve",
    "Résumé",
)
SMALL = ("of", "the", "in", "my", "your", "on", "to", "and", "with", "for", "a", "no")
VERSIONS = (" - Remix", " (Live)", " - Acoustic", " - Radio Edit", " (Extended Mix)", " - Remastered")


@dataclass
class Generated:
    seed: int
    profiles: int
    albums: int
    tracks: int
    credits: int
    chart_rows: int
    roles: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class CatalogNotEmpty(RuntimeError):
    """A catalog is already there and was not asked to be replaced."""


def _ids(rng: random.Random) -> Callable[[], str]:
    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    return new_id


def _person(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.12:
        return f"{rng.choice(STAGE)} {rng.choice(FIRST + LAST)}"
    if roll < 0.22:
        return f"The {rng.choice(BAND_ADJ)} {rng.choice(BAND_NOUN)}"
    if roll < 0.27:
        return rng.choice(FIRST)  # a one-name act (duplicates by design)
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _title(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.25:
        words = [rng.choice(WORDS)]
    elif roll < 0.6:
        words = [rng.choice(WORDS), rng.choice(WORDS)]
    elif roll < 0.85:
        words = [rng.choice(WORDS), rng.choice(SMALL), rng.choice(WORDS)]
    else:
        words = [rng.choice(SMALL).capitalize(), rng.choice(WORDS), rng.choice(SMALL), rng.choice(WORDS)]
    return " ".join(words)


def _code(rng: random.Random, alphabet: str, k: int) -> str:
    return "".join(rng.choices(alphabet, k=k))


def generate(
    *, tracks: int, profiles: int, albums: int, credits: int, seed: int = DEFAULT_SEED, replace: bool = False
) -> Generated:
    """Write a generated catalog in the caller's transaction (the caller commits)."""
    catalog = store().catalog
    if not catalog_is_empty():
        if not replace:
            raise CatalogNotEmpty("a catalog exists already; add --replace to replace it")
        catalog.clear()
    rng = random.Random(seed)  # noqa: S311 - generated data must be reproducible, not secret
    new_id = _ids(rng)

    with catalog.bulk_load():
        roles, role_of = _roles()
        catalog.bulk_insert("credit_roles", ("id", "name", "parent_id"), roles)
        profile_ids = _profiles(rng, new_id, profiles, catalog.bulk_insert)
        album_rows = _albums(rng, new_id, albums)
        # Zipf-like: profile k's weight 1/(k+30); the most credited holds about a quarter percent.
        cumulative = list(accumulate(1.0 / (k + 30) for k in range(len(profile_ids))))
        family_counts: dict[str, Counter[str]] = defaultdict(Counter)
        album_popularity: dict[int, int] = {}
        made = {"tracks": 0, "credits": 0}
        per_track = credits / max(tracks, 1)
        for start in range(0, tracks, CHUNK):
            chunk = _track_chunk(
                rng, new_id, min(CHUNK, tracks - start), album_rows, profile_ids, cumulative, per_track,
                credits - made["credits"], made["credits"], role_of, family_counts, album_popularity,
            )  # fmt: skip
            for table, columns, rows in chunk:
                catalog.bulk_insert(table, columns, rows)
            made["tracks"] += len(chunk[0][2])
            made["credits"] += len(chunk[3][2])
        for index, row in enumerate(album_rows):
            row[-1] = album_popularity.get(index, 0)
        catalog.bulk_insert("albums", _ALBUM_COLUMNS, album_rows)
        charts = _charts(rng, family_counts)
        catalog.bulk_insert("chart_rows", _CHART_COLUMNS, charts)
    store().catalog.sync_ids()
    catalog.refresh_profile_stats()
    return Generated(seed, len(profile_ids), len(album_rows), made["tracks"], made["credits"], len(charts), len(roles))


def _roles() -> tuple[list[tuple[int, str, int | None]], dict[str, list[int]]]:
    rows: list[tuple[int, str, int | None]] = []
    by_family: dict[str, list[int]] = {}
    for family, children in ROLE_TAXONOMY.items():
        family_id = len(rows) + 1
        rows.append((family_id, family, None))
        by_family[family] = []
        for child in children:
            rows.append((len(rows) + 1, child, family_id))
            by_family[family].append(len(rows))
    return rows, by_family


_PROFILE_COLUMNS = ("id", "name", "city", "country", "bio", "spotify_id", "avatar_url", "search_key", "common_roles")


def _profiles(rng: random.Random, new_id: Callable[[], str], count: int, insert: Callable[..., int]) -> list[str]:
    ids: list[str] = []
    rows: list[tuple[object, ...]] = []
    for _ in range(count):
        pid, name = new_id(), _person(rng)
        city, country = rng.choice(CITIES) if rng.random() < 0.85 else (None, None)
        bio = (
            f"{name} is a {rng.choice(('songwriter', 'producer', 'engineer', 'artist'))}."
            if rng.random() < 0.5
            else None
        )
        spotify = _code(rng, BASE62, 22) if rng.random() < 0.8 else None
        avatar = f"{IMAGES}/profiles/{pid}.jpg" if rng.random() < 0.9 else None
        rows.append((pid, name, city, country, bio, spotify, avatar, fold(name)[:SEARCH_KEY_LENGTH], "[]"))
        ids.append(pid)
        if len(rows) >= CHUNK:
            insert("profiles", _PROFILE_COLUMNS, rows)
            rows = []
    insert("profiles", _PROFILE_COLUMNS, rows)
    return ids


_ALBUM_COLUMNS = ("id", "title", "album_art", "upc", "label", "release_date", "spotify_id", "search_key", "popularity")


def _albums(rng: random.Random, new_id: Callable[[], str], count: int) -> list[list[object]]:
    start = date(1960, 1, 1)
    span = (date(2026, 10, 31) - start).days
    rows: list[list[object]] = []
    for _ in range(count):
        aid, title = new_id(), _title(rng)
        released = start + timedelta(days=int(span * (1 - rng.random() ** 2)))  # more recent than old
        upc = "".join(str(rng.randrange(10)) for _ in range(12))
        rows.append(
            [aid, title, f"{IMAGES}/albums/{aid}.jpg", upc, rng.choice(LABELS), released, _code(rng, BASE62, 22),
             fold(title)[:SEARCH_KEY_LENGTH], 0]
        )  # fmt: skip
    return rows


_TRACK_COLUMNS = ("id", "title", "popularity", "isrcs", "spotify_id", "spotify_preview_url", "label", "search_key")
_CREDIT_COLUMNS = ("id", "profile_id", "track_id", "album_id", "release_date")
_CHART_COLUMNS = (
    "id", "profile_id", "chart_name", "position", "position_change", "score", "score_change", "credits_count",
    "percentage",
)  # fmt: skip


def _track_chunk(
    rng: random.Random,
    new_id: Callable[[], str],
    count: int,
    album_rows: list[list[object]],
    profile_ids: list[str],
    cumulative: list[float],
    per_track: float,
    credits_left: int,
    credits_made: int,
    role_of: dict[str, list[int]],
    family_counts: dict[str, Counter[str]],
    album_popularity: dict[int, int],
) -> list[tuple[str, tuple[str, ...], list[tuple[object, ...]]]]:
    """`count` tracks with their ISRCs, artists, credits and the roles held on each credit."""
    tracks: list[tuple[object, ...]] = []
    isrcs: list[tuple[object, ...]] = []
    artists: list[tuple[object, ...]] = []
    credits: list[tuple[object, ...]] = []
    links: list[tuple[object, ...]] = []
    whole, fraction = int(per_track), per_track - int(per_track)
    crew_families = ("Songwriter", "Producer", "Engineer", "Performer", "Songwriter", "Producer")
    for _ in range(count):
        tid = new_id()
        album_index = rng.randrange(len(album_rows))
        album = album_rows[album_index]
        released: date = album[5]  # type: ignore[assignment]
        popularity = int(100 * rng.random() ** 3)
        billed = [rng.choices(profile_ids, cum_weights=cumulative)[0]]
        title = _title(rng)
        if rng.random() < 0.15:
            featured = rng.choices(profile_ids, cum_weights=cumulative)[0]
            if featured != billed[0]:
                billed.append(featured)
                title += f" (feat. {_person(rng)})"
        if rng.random() < 0.08:
            title += rng.choice(VERSIONS)
        registrant = _code(rng, string.ascii_uppercase + string.digits, 3)
        codes = [f"{rng.choice(ISRC_COUNTRIES)}{registrant}{released.year % 100:02d}{rng.randrange(100000):05d}"]
        tracks.append(
            (tid, title, popularity, json.dumps(codes), _code(rng, BASE62, 22), f"{AUDIO}/previews/{tid}.mp3", album[4],
             fold(title)[:SEARCH_KEY_LENGTH])
        )  # fmt: skip
        isrcs.extend((code, tid) for code in dict.fromkeys(codes))
        artists.extend((tid, position, pid) for position, pid in enumerate(billed))
        album_popularity[album_index] = max(album_popularity.get(album_index, 0), popularity)
        wanted = whole + (1 if rng.random() < fraction else 0)
        crew: dict[str, str] = dict.fromkeys(billed, "Artist")
        while len(crew) < wanted:
            crew.setdefault(rng.choices(profile_ids, cum_weights=cumulative)[0], rng.choice(crew_families))
        for pid, family in crew.items():
            if len(credits) >= credits_left:
                break
            credit_id = credits_made + len(credits) + 1
            credits.append((credit_id, pid, tid, album[0], released))
            held = {role_of[family][0] if family == "Artist" else rng.choice(role_of[family])}
            if family != "Artist" and rng.random() < 0.3:
                held.add(rng.choice(role_of[rng.choice(crew_families)]))
            links.extend((credit_id, role_id) for role_id in sorted(held))
            family_counts[family][pid] += 1
    return [
        ("tracks", _TRACK_COLUMNS, tracks),
        ("track_isrcs", ("isrc", "track_id"), isrcs),
        ("track_artists", ("track_id", "position", "profile_id"), artists),
        ("credits", _CREDIT_COLUMNS, credits),
        ("credit_role_links", ("credit_id", "role_id"), links),
    ]


def _charts(rng: random.Random, family_counts: dict[str, Counter[str]]) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for family, counts in sorted(family_counts.items()):
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:CHART_DEPTH]
        for position, (pid, count) in enumerate(ranked, start=1):
            rows.append(
                (len(rows) + 1, pid, CHARTS[family], position, rng.randint(-10, 10), count * 100 + rng.randrange(100),
                 rng.randint(-500, 500) if rng.random() < 0.8 else None, count, round(100.0 * count / total, 3))
            )  # fmt: skip
    return rows


def sizes(
    tracks: int | None, profiles: int | None, albums: int | None, credits: int | None, tenth: bool
) -> dict[str, int]:
    """The sizes asked for, the rest from the full-size catalog (a tenth of it when `tenth`)."""
    given = {"tracks": tracks, "profiles": profiles, "albums": albums, "credits": credits}
    return {k: v if v is not None else (FULL[k] // 10 if tenth else FULL[k]) for k, v in given.items()}
