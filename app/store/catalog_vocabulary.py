"""The catalog's vocabulary and the typo tier on PostgreSQL: which rows a one-typo search reads.

A typo pattern (app/store/catalog.py `Keyword.fuzzy_patterns`, "% midn_gth%") is checked on each
row it is asked of; the question is which rows to ask. Through the trigram index, a variant whose
letters leave no trigram in common with the names it would match ("the_ma" of "thelma" keeps
only "the") reads every name holding "the" - a third of the catalog - to find none. Search
engines answer typos from their term dictionary instead (Lucene's fuzzy query, pg_trgm's own
documentation for spelling suggestions), and so does this: `catalog_words` holds every word of
every name (migration 0026; a trigger adds a name's words as it is written, words are never
taken out - a stale one costs a lookup that finds nothing). A search first finds the catalog's
words one typo from the keyword's - a few lookups of a small table, through its B-tree (the
variant's letters before the wildcard) or its trigram index - and then reads through the names'
full-text index only the rows holding one of them, which the patterns then check. A typo no
word of the catalog is one away from reads no name at all.

What "one typo" matches is unchanged and the same on both stores: `_` in a pattern may also be
a space in the name, so a keyword that runs two words together ("sweethome") finds them apart
("Sweet Home Alabama"); such a split is looked up as its two words. The only words looked up by
a prefix of one letter are left out (a name's last word typed as one letter after a run-together
word): their lookup would read a 26th of the vocabulary, so such a row is found from the first
word alone and the pattern decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.store.catalog import Keyword

MIN_PREFIX = 2  # letters a looked-up prefix needs (see the module docstring)


def _split(word: str) -> list[tuple[str, str]]:
    """Where a space typed as a letter, or left out, would part `word` into two words of the name:
    (the first word, what the second starts with)."""
    added = [(word[:j], word[j:]) for j in range(1, len(word))]  # "sweethome": "sweet" "home"
    changed = [(word[:j], word[j + 1 :]) for j in range(1, len(word) - 1)]  # "sweetxhome"
    return added + changed


def lookups(word: Keyword) -> list[str]:
    """The LIKE patterns to find in `catalog_words`: each long word's variants (a prefix when it
    is the keyword's last word, which a name's word may continue) and the words a split would make."""
    last = len(word.words) - 1
    patterns: set[str] = set()
    for place in word.long_words():
        end = "%" if place == last else ""
        patterns.update(variant + end for variant in word.typo_variants(place))
        for head, tail in _split(word.words[place]):
            patterns.add(head)
            if len(tail) >= MIN_PREFIX or not end:
                patterns.add(tail + end)
    return sorted(patterns)


@dataclass(frozen=True, slots=True)
class NearQuery:
    """The rows a typo pattern can match, as a full-text query (PostgreSQL tsquery). `exact`: it
    matches exactly those rows (one word typed, no split: a row holds a word that is the variant,
    or continues it) - else the patterns decide among the rows it finds (the other words' order,
    a split's space)."""

    query: str
    exact: bool


def near_query(word: Keyword, found: set[str]) -> NearQuery | None:
    """For each long word: the keyword's other words (the last as a prefix) and one of its
    variants' words or one of its splits, from the catalog's words `found` by `lookups`. None when
    no row can match."""
    last = len(word.words) - 1
    found = {w for w in found if w.isalnum()}  # a word written by hand outside `fold` is not a term
    branches = []
    exact = len(word.words) == 1
    for place in word.long_words():
        end = "%" if place == last else ""
        variants = [_like(v + end) for v in word.typo_variants(place)]
        either = sorted(w for w in found if any(v.match(w) for v in variants))
        alternatives = [_term(w) for w in either]
        for head, tail in _split(word.words[place]):
            if head not in found:
                continue
            if len(tail) < MIN_PREFIX and end:
                alternatives.append(_term(head))
                exact = False
                continue
            second = _like(tail + end)
            tails = sorted(w for w in found if second.match(w))
            if tails:
                alternatives.append(f"({_term(head)} & ({' | '.join(_term(t) for t in tails)}))")
                exact = False
        if not alternatives:
            continue
        others = [_term(w) + (":*" if i == last else "") for i, w in enumerate(word.words) if i != place]
        branches.append(" & ".join([*others, f"({' | '.join(dict.fromkeys(alternatives))})"]))
    return NearQuery(" | ".join(f"({b})" for b in branches), exact) if branches else None


def _like(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression over one word (`_` one character, `%` any run)."""
    parts = ("." if c == "_" else ".*" if c == "%" else re.escape(c) for c in pattern)
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def _term(word: str) -> str:
    """A word as a tsquery term. Folded words hold letters and digits only: quoted, nothing in
    them reads as an operator."""
    return f"'{word}'"
