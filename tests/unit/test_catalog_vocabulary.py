"""The typo tier's vocabulary (app/store/catalog_vocabulary.py): what a one-typo search looks up
among the catalog's words, the query it then reads names through (a full-text query on
PostgreSQL, trigram phrases on SQLite), and the vocabulary each store keeps as names are written."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import event, text

from app.core.extensions import db
from app.models import Album, Track
from app.store import store
from app.store.catalog_keyword import EXACT, FRAGMENT, PREFIX, WORD, keyword
from app.store.catalog_vocabulary import ENDS, HOLDS, IS, STARTS, NearQuery, lookups, near_phrases, near_query, needs
from tests.api_support import uid

_TRACK = {"isrcs": [], "spotify_preview_url": "https://audio.example/1.mp3"}


def _word(raw: str):
    word = keyword(raw)
    assert word is not None
    return word


def test_the_lookups_are_each_variant_and_the_words_a_split_would_make():
    wanted = lookups(_word("sweethome"))
    assert "sweethom_%" in wanted  # a letter changed: the last word is a prefix a name's word may continue
    assert "swetehome%" in wanted  # two swapped
    assert {"sweet", "home%"} <= set(wanted)  # "sweet home": the first word whole, the second as typed so far
    assert "sweethome%" not in wanted  # the word as typed is the other tiers'
    assert "e" not in {w.rstrip("%") for w in wanted if w.endswith("%")}  # no one-letter prefix (a 26th of the words)


def test_a_word_before_the_last_is_looked_up_whole():
    wanted = lookups(_word("smels like"))
    assert "smel_s" in wanted and "smel_s%" not in wanted  # "smells", a letter added
    assert not any(w.startswith("like") for w in wanted)  # four letters: typed as is


def test_the_query_is_the_catalog_words_found_and_exact_for_one_word():
    assert near_query(_word("midnigth"), {"midnight", "midnights", "unrelated"}) == NearQuery(
        "(('midnight' | 'midnights'))", exact=True
    )


def test_a_catalog_word_that_is_not_letters_and_digits_never_reaches_the_query():
    # `fold` writes letters and digits only; a name's key written by hand could hold a quote,
    # which "midn_gth" would match and which would break the full-text query.
    assert near_query(_word("midnigth"), {"midn'gth", "midnight"}) == NearQuery("(('midnight'))", exact=True)


def test_a_first_word_with_no_second_word_after_it_is_no_split():
    near = near_query(_word("acngel"), {"a", "angel", "angels"})  # "a ngel..." would be a split: no such word
    assert near == NearQuery("(('angel' | 'angels'))", exact=True)


def test_a_split_joins_its_two_words_and_the_patterns_then_decide():
    near = near_query(_word("sweethome"), {"sweet", "home", "homes"})
    assert near == NearQuery("((('sweet' & ('home' | 'homes'))))", exact=False)


def test_the_other_words_of_the_keyword_narrow_the_query():
    near = near_query(_word("teen spirt"), {"spirit"})
    assert near == NearQuery("('teen' & ('spirit'))", exact=False)  # "teen" before it: the patterns check the order
    near = near_query(_word("smels like"), {"smells"})
    assert near == NearQuery("('like':* & ('smells'))", exact=False)  # the last word typed so far


def test_sqlite_reads_the_same_stand_ins_as_phrases_of_the_names():
    assert near_phrases(_word("midnigth"), {"midnight", "midnights", "night"}) == ([" midnight", " midnights"], True)
    assert near_phrases(_word("sweethome"), {"sweet", "home", "homes"}) == ([" sweet home", " sweet homes"], False)
    assert near_phrases(_word("smels like"), {"smells"}) == ([" smells "], False)  # a whole word: another follows
    assert near_phrases(_word("thelma"), {"the", "velma"}) is None


def test_no_word_one_typo_away_means_no_name_is_read():
    assert near_query(_word("thelma"), {"the", "velma"}) is None  # "the" is a split only with an "lma..." after it


def test_one_word_needs_a_word_starting_with_it_and_the_fragment_one_holding_it():
    need = needs(_word("Younr"))
    assert need.starting == ((STARTS, "younr"),) and need.inside == ((HOLDS, "younr"),)


def test_more_words_need_the_inner_ones_whole_the_first_ending_one_and_the_last_starting_one():
    need = needs(_word("summer of lo"))
    assert need.starting == ((IS, "summer"), (IS, "of"), (STARTS, "lo"))
    assert need.inside == ((ENDS, "summer"), (IS, "of"), (STARTS, "lo"))


def test_an_ending_too_short_for_the_trigram_index_is_not_looked_up():
    assert needs(_word("in lo")).inside == ((STARTS, "lo"),)  # " in lo" may be "...rain love": "in" ends a word


@pytest.fixture
def vocabulary():
    # Words outlive their names (by design), and the suite's other tests write names: start empty.
    db.session.execute(text("DELETE FROM catalog_words"))
    db.session.commit()


def _names(kind: str, raw: str) -> list[str]:
    model = {"track": Track, "album": Album}[kind]
    ids = store().catalog.search([kind], raw, 10)[kind].ids
    return [db.session.get(model, i).title for i in ids]


def test_the_database_keeps_the_words_of_each_name_written(vocabulary):
    db.session.add(Track(id=uid(1, 2), title="Fjällräven Nights", popularity=10, **_TRACK, spotify_id="t1"))
    db.session.add(Album(id=uid(1, 3), title="Quiet Harbour", release_date=date(2001, 1, 1), popularity=5))
    db.session.commit()
    words = set(db.session.execute(text("SELECT word FROM catalog_words")).scalars())
    assert {"fjallraven", "nights", "quiet", "harbour"} <= words
    assert _names("track", "fjallravem") == ["Fjällräven Nights"]


def test_a_renamed_name_is_found_by_a_typo_of_its_new_words(vocabulary):
    track = Track(id=uid(2, 2), title="Old Title", popularity=10, **_TRACK, spotify_id="t2")
    db.session.add(track)
    db.session.commit()
    assert _names("track", "zephyrs") == []
    track.title = "Zephyr Song"
    db.session.commit()
    assert _names("track", "zephyrs") == ["Zephyr Song"]  # "zephyr" came in with the update


def _searched(kinds: list[str], raw: str) -> tuple[dict, list[str]]:
    """The search's buckets, and the statements it ran."""
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        found = store().catalog.search(kinds, raw, 10)
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    return found, statements


def test_a_typo_no_catalog_word_is_near_reads_no_name(vocabulary):
    db.session.add(Track(id=uid(3, 2), title="The Velvet Hour", popularity=10, **_TRACK, spotify_id="t3"))
    db.session.commit()
    found, statements = _searched(["track"], "thelma")
    hits = found["track"]
    assert hits.total == 0 and hits.ids == []
    looked_up = next(i for i, s in enumerate(statements) if "FROM catalog_words" in s)
    assert not any("FROM tracks" in s for s in statements[looked_up + 1 :])


def test_the_buckets_of_one_search_share_one_vocabulary_lookup(vocabulary):
    db.session.add(Track(id=uid(4, 2), title="Marigold Rain", popularity=10, **_TRACK, spotify_id="t4"))
    db.session.add(Album(id=uid(4, 3), title="Marigold", release_date=date(2001, 1, 1), popularity=5))
    db.session.commit()
    found, statements = _searched(["profile", "track", "album"], "marigols")
    assert found["track"].ids == [uid(4, 2)] and found["album"].ids == [uid(4, 3)]
    assert found["profile"].ids == [] and found["profile"].total == 0
    assert sum(s.startswith("SELECT word FROM catalog_words") for s in statements) == 1


def test_a_keyword_no_catalog_word_holds_skips_every_tier_but_the_typo_one(vocabulary):
    db.session.add(Track(id=uid(5, 2), title="Marigold Rain", popularity=10, **_TRACK, spotify_id="t5"))
    db.session.commit()
    assert store().catalog._possible_tiers(_word("marigols")) == ()
    found, statements = _searched(["track"], "marigols")
    assert found["track"].ids == [uid(5, 2)] and found["track"].total == 1  # the typo tier still finds it
    assert "EXISTS" in statements[0] and "catalog_words" in statements[0]  # asked first, once
    # The names are read twice, both by the typo tier (its count, its ids): no tier before it ran.
    assert sum("FROM tracks" in s for s in statements) == 2


def test_a_keyword_only_inside_a_word_is_read_by_the_fragment_tier_alone(vocabulary):
    db.session.add(Track(id=uid(6, 2), title="Marigold Rain", popularity=10, **_TRACK, spotify_id="t6"))
    db.session.commit()
    catalog = store().catalog
    assert catalog._possible_tiers(_word("igold")) == (FRAGMENT,)
    assert catalog._possible_tiers(_word("old rai")) == (FRAGMENT,)  # "marigold" ends with "old", "rain" starts "rai"
    assert catalog._possible_tiers(_word("marigold ra")) == (EXACT, PREFIX, WORD, FRAGMENT)
    assert catalog._possible_tiers(_word("rain zebra")) == ()  # no word starts with "zebra"
    assert catalog._possible_tiers(_word("ma")) == (EXACT, PREFIX, WORD)  # too short to ask about
    for raw in ("igold", "old rai", "marigold ra"):
        assert _names("track", raw) == ["Marigold Rain"], raw
