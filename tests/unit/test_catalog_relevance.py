"""Search relevance: what people expect to find first, on both stores (SQLite by default,
PostgreSQL with TEST_DATABASE_URL) - exact name, then prefix, then a word, a fragment, one typo;
ties by popularity; accents, case and punctuation never matter (app/store/catalog.py)."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import event

from app.core.extensions import db
from app.models import Album, Profile, Track
from app.store import store
from tests.api_support import uid

PROFILES = {
    "Beyoncé": 99, "Beyoncé Tribute Band": 20, "Björk": 80, "Rihanna": 95, "Jay-Z": 92, "Kanye West": 90,
    "Sinéad O'Connor": 70, "Zoë Kravitz": 60, "The Beatles": 98, "Beatles Revival": 30, "Max Martin": 85,
    "Martin Garrix": 88, "Chris Martin": 87, "Adele": 96, "Adeline": 10, "José González": 65, "DJ Shadow": 55,
    "Sigur Rós": 58, "Mötley Crüe": 66, "Queen": 97, "Queens of the Stone Age": 75, "Queen Latifah": 70,
}  # fmt: skip
TRACKS = [
    ("Crazy in Love", 95), ("Drunk in Love", 90), ("Crazy", 60), ("Crazy Train", 70), ("Love Story", 85),
    ("Lovely", 80), ("Love", 40), ("Glove Box", 30), ("Halo", 88), ("Hello", 92), ("Yellow", 75),
    ("Despacito", 97), ("Déjà Vu", 65), ("Café del Mar", 55), ("Señorita", 83), ("Bohemian Rhapsody", 96),
    ("Rhapsody in Blue", 50), ("Don't Stop Me Now", 89), ("Stop", 20), ("Smells Like Teen Spirit", 91),
    ("Spirit", 35), ("Nothing Else Matters", 86), ("Umbrella (feat. JAY-Z)", 93),
    ("Run This Town (feat. Rihanna & Kanye West)", 70), ("Home", 10), ("Home", 50), ("Homecoming", 60),
    ("Sweet Home Alabama", 78), ("Summertime Sadness", 74), ("Summer", 45),
]  # fmt: skip
ALBUMS = {
    "Lemonade": 90, "Dangerously in Love": 85, "A Night at the Opera": 88, "Nevermind": 92, "Back in Black": 87,
    "Thriller": 99, "The Dark Side of the Moon": 94, "Abbey Road": 93, "Rumours": 89, "Blue": 40,
}  # fmt: skip

# (kind, keyword, the names expected first, in this order)
CASES = [
    ("profile", "beyonce", ["Beyoncé", "Beyoncé Tribute Band"]),  # accents folded; exact, then prefix
    ("profile", "Beyoncé", ["Beyoncé", "Beyoncé Tribute Band"]),
    ("profile", "BEYONCE", ["Beyoncé", "Beyoncé Tribute Band"]),
    ("profile", "beyonse", ["Beyoncé", "Beyoncé Tribute Band"]),  # one letter changed
    ("profile", "bjork", ["Björk"]),
    ("profile", "rihana", ["Rihanna"]),  # one letter dropped
    ("profile", "jay z", ["Jay-Z"]),  # punctuation is a word break
    ("profile", "jayz", []),  # four letters: no typo forgiven, no match
    ("profile", "martin", ["Martin Garrix", "Chris Martin", "Max Martin"]),  # prefix, then words by popularity
    ("profile", "queen", ["Queen", "Queens of the Stone Age", "Queen Latifah"]),
    ("profile", "adele", ["Adele", "Adeline"]),
    ("profile", "sigur ros", ["Sigur Rós"]),
    ("profile", "motley crue", ["Mötley Crüe"]),
    ("profile", "oconnor", ["Sinéad O'Connor"]),  # an apostrophe joins
    ("profile", "o'connor", ["Sinéad O'Connor"]),
    ("profile", "zoe", ["Zoë Kravitz"]),
    ("profile", "beatles", ["Beatles Revival", "The Beatles"]),  # prefix before word, whatever the popularity
    ("profile", "shadow", ["DJ Shadow"]),
    ("profile", "gonzalez", ["José González"]),
    ("track", "crazy", ["Crazy", "Crazy in Love", "Crazy Train"]),
    ("track", "love", ["Love", "Love Story", "Lovely", "Crazy in Love", "Drunk in Love", "Glove Box"]),
    ("track", "in love", ["Crazy in Love", "Drunk in Love"]),
    ("track", "hello", ["Hello", "Yellow"]),  # "yello" is one letter from "hello"
    ("track", "despasito", ["Despacito"]),
    ("track", "deja vu", ["Déjà Vu"]),
    ("track", "cafe", ["Café del Mar"]),
    ("track", "senorita", ["Señorita"]),
    ("track", "bohemian rapsody", ["Bohemian Rhapsody"]),  # one letter added
    ("track", "rhapsody", ["Rhapsody in Blue", "Bohemian Rhapsody"]),
    ("track", "dont stop", ["Don't Stop Me Now"]),
    ("track", "stop", ["Stop", "Don't Stop Me Now"]),
    ("track", "teen spirit", ["Smells Like Teen Spirit"]),
    ("track", "feat jay z", ["Umbrella (feat. JAY-Z)"]),
    ("track", "rihanna", ["Run This Town (feat. Rihanna & Kanye West)"]),
    ("track", "home", ["Home", "Home", "Homecoming", "Sweet Home Alabama"]),  # duplicates: by popularity
    ("track", "summer", ["Summer", "Summertime Sadness"]),
    ("track", "nothing els", ["Nothing Else Matters"]),
    ("track", "ummer", ["Summertime Sadness", "Summer"]),  # fragments, by popularity
    ("track", "hlelo", ["Hello"]),  # two neighbours swapped
    ("track", "sweethome", ["Sweet Home Alabama"]),  # a space left out is a letter dropped
    ("track", "crazyi", ["Crazy in Love", "Crazy Train", "Crazy"]),  # ... then the next word's first letter
    ("track", "teen spirt", ["Smells Like Teen Spirit"]),  # the typo in the last of two words
    ("track", "smels like", ["Smells Like Teen Spirit"]),  # ... in the first, the last typed so far
    ("track", "lovelx", ["Lovely"]),  # a letter changed at the end
    ("track", "thelma", []),  # no word of the catalog is one typo away
    ("album", "thriler", ["Thriller"]),
    ("album", "dark side", ["The Dark Side of the Moon"]),
    ("album", "in love", ["Dangerously in Love"]),
    ("album", "blue", ["Blue"]),
    ("album", "nevermnd", ["Nevermind"]),
    ("album", "abbey", ["Abbey Road"]),
]


@pytest.fixture
def catalog():
    profiles = {name: uid(n, 1) for n, name in enumerate(PROFILES, start=1)}
    db.session.add_all(Profile(id=profiles[name], name=name, popularity=pop) for name, pop in PROFILES.items())
    tracks = {}
    for n, (title, pop) in enumerate(TRACKS, start=1):
        tracks[uid(n, 2)] = title
        db.session.add(
            Track(
                id=uid(n, 2), title=title, popularity=pop, isrcs=[], spotify_id=f"t{n}",
                spotify_preview_url=f"https://audio.example/{n}.mp3",
            )
        )  # fmt: skip
    albums = {name: uid(n, 3) for n, name in enumerate(ALBUMS, start=1)}
    db.session.add_all(
        Album(id=albums[name], title=name, release_date=date(2000, 1, 1), popularity=pop)
        for name, pop in ALBUMS.items()
    )
    db.session.commit()
    return {**{v: k for k, v in profiles.items()}, **tracks, **{v: k for k, v in albums.items()}}


@pytest.mark.parametrize(("kind", "keyword", "expected"), CASES, ids=[f"{k}:{w}" for k, w, _ in CASES])
def test_search_ranks_what_people_expect_first(catalog, kind, keyword, expected):
    hits = store().catalog.search([kind], keyword, 10)[kind]
    found = [catalog[i] for i in hits.ids]
    assert found[: len(expected)] == expected, found
    assert hits.total >= len(expected)
    if not expected:
        assert hits.ids == [] and hits.total == 0


def test_a_typo_counts_each_row_it_finds_once(catalog):
    """The typo tier's count adds only the rows the other tiers did not match."""
    assert store().catalog.search(["profile"], "beyonse", 10)["profile"].total == 2  # Beyoncé, Beyoncé Tribute Band
    assert store().catalog.search(["track"], "hlelo", 10)["track"].total == 1


def test_a_search_its_tiers_answer_whole_counts_nothing_again(catalog):
    """When every tier was read and found fewer than the page, the rows found are every match:
    their number is the total, without a count statement. A page the tiers fill is counted."""
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        few = store().catalog.search(["track"], "rhap", 10)["track"]
        counted = len(statements)
        full = store().catalog.search(["track"], "rhap", 1)["track"]
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    assert [catalog[i] for i in few.ids] == ["Rhapsody in Blue", "Bohemian Rhapsody"] and few.total == 2
    assert not any("count(" in s for s in statements[:counted])
    assert full.total == 2 and len(full.ids) == 1
    assert any("count(" in s for s in statements[counted:])


@pytest.fixture
def popular_first(monkeypatch):
    """PostgreSQL reads a text tier among the popular rows first (from the popularity index's
    range), above the table's FLOOR_RANK-th most popular row: lowered here so the test catalog has
    rows above and below the floor."""
    from app.store import catalog as catalog_module
    from app.store import catalog_postgresql

    catalog = store().catalog
    if not isinstance(catalog, catalog_postgresql.PostgresCatalog):
        pytest.skip("PostgreSQL only: SQLite reads its text index in one pass")
    monkeypatch.setattr(catalog, "FLOOR_RANK", 6)  # tracks: popularity 90 and up
    monkeypatch.setattr(catalog_postgresql, "_floors", {})
    # and a typo "matches many" from one row: the typo tier reads the popular rows first too
    monkeypatch.setattr(catalog_module, "TOTAL_CAP", 1)
    answered: list[list[str] | None] = []
    popular_first = catalog._popular_first

    def spy(*args, **kwargs):
        ids = popular_first(*args, **kwargs)
        answered.append(ids)
        return ids

    monkeypatch.setattr(catalog, "_popular_first", spy)
    return answered


@pytest.mark.parametrize(("kind", "keyword", "expected"), CASES, ids=[f"{k}:{w}" for k, w, _ in CASES])
def test_the_popular_rows_first_rank_the_same(catalog, popular_first, kind, keyword, expected):
    for n in range(1, len(expected) + 1):
        assert [catalog[i] for i in store().catalog.search([kind], keyword, n)[kind].ids] == expected[:n]


def test_the_popular_rows_answer_a_common_word(catalog, popular_first):
    assert [catalog[i] for i in store().catalog.search(["track"], "in love", 2)["track"].ids] == [
        "Crazy in Love",
        "Drunk in Love",
    ]
    assert [catalog[i] for i in store().catalog.search(["track"], "despasito", 1)["track"].ids] == ["Despacito"]
    # "in love": the word tier from the popular rows; "despasito": no catalog word holds it, so no
    # word or fragment tier is read - only the typo tier
    named = [[catalog[i] for i in ids] for ids in popular_first]
    assert named == [["Crazy in Love", "Drunk in Love"], ["Despacito"]]


def test_ties_are_broken_by_popularity_then_id(catalog):
    homes = store().catalog.search(["track"], "home", 2)["track"].ids
    assert homes == [uid(26, 2), uid(25, 2)]  # "Home" 50 before "Home" 10


def test_autocomplete_by_prefix_over_the_three_kinds(catalog):
    def names(q):
        return [(s.name, s.kind) for s in store().catalog.autocomplete(q, 10)]

    assert names("be")[:3] == [
        ("Beyoncé", "profile"),
        ("Beatles Revival", "profile"),
        ("Beyoncé Tribute Band", "profile"),
    ]
    assert ("The Beatles", "profile") in names("be")  # a word of the name, after the prefixes
    assert names("rhap") == [("Rhapsody in Blue", "track"), ("Bohemian Rhapsody", "track")]
    assert names("queen")[:3] == [
        ("Queen", "profile"),
        ("Queens of the Stone Age", "profile"),
        ("Queen Latifah", "profile"),
    ]
    assert names("thri") == [("Thriller", "album")]
    assert names("%") == [] and names("!!") == []


def test_a_keyword_without_letters_or_digits_matches_nothing(catalog):
    for keyword in ("%", "_", "!", "!%", "\\", "  -  "):
        hits = store().catalog.search(["track"], keyword, 10)["track"]
        assert (hits.total, hits.ids) == (0, []), keyword


def test_the_longest_keyword_stays_one_bounded_statement(catalog):
    """200 characters of long words (the API's most): typo variants for two words of up to 16
    letters only - SQLite refuses a statement of more than 500 selects."""
    from app.store.catalog_keyword import keyword

    longest = " ".join(["abcdefghijklmnop"] * 11 + ["abcdefghijklmnopqrstuvwxyz"])[:200]
    assert len(keyword(longest).fuzzy_patterns()) <= 2 * 64
    assert store().catalog.search(["track"], longest, 10)["track"].ids == []
    assert store().catalog.search(["track"], "x" * 200, 10)["track"].ids == []


def test_there_are_enough_cases():
    assert len(CASES) >= 30
