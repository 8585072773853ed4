"""The catalog's vocabulary and the typo tier: which rows a one-typo search reads, on both stores.

A typo pattern (app/store/catalog.py `Keyword.fuzzy_patterns`, "% midn_gth%") is checked on each
row it is asked of; the question is which rows to ask. Through a trigram index, a variant whose
letters leave no trigram in common with the names it would match ("the_ma" of "thelma" keeps
only "the") reads every name holding "the" - a third of the catalog - to find none, and a variant
that keeps the keyword's common trigrams ("midnigh_") reads every "midnight" again, once per
variant. Search engines answer typos from their term dictionary instead (Lucene's fuzzy query,
pg_trgm's own documentation for spelling suggestions), and so does this: `catalog_words` holds
every word of every name (migrations 0026 and 0027; triggers add a name's words as it is written,
words are never taken out by them - a stale one costs a lookup that finds nothing). A search
first finds the catalog's words one typo from the keyword's - a few lookups of a small table,
through its B-tree or trigram index - and then reads only the rows holding one of them (their
`Near` stand-ins: on PostgreSQL a full-text query over the names' words, on SQLite phrases its
trigram tables find), which the patterns then check. A typo no word of the catalog is one away
from reads no name at all.

What "one typo" matches is unchanged and the same on both stores: `_` in a pattern may also be
a space in the name, so a keyword that runs two words together ("sweethome") finds them apart
("Sweet Home Alabama"); such a split is looked up as its two words. The only words looked up by
a prefix of one letter are left out (a name's last word typed as one letter after a run-together
word): their lookup would read a 26th of the vocabulary, so such a row is found from the first
word alone and the pattern decides.

The vocabulary also says when the other tiers cannot match: a name starting with "younr", or with
a word starting with it, has a word starting with it, and a name holding it has a word holding
it. A search first asks whether the catalog's words hold what its tiers need (`needs`); a typo
that no word holds reads no name for exact, prefix, word or fragment - only the typo tier is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.store.catalog_keyword import Keyword

MIN_PREFIX = 2  # letters a looked-up prefix needs (see the module docstring)
MIN_INSIDE = 3  # letters a looked-up word ending or inner part needs: fewer leave the trigram index no trigram
# How a catalog word must relate to a text for a tier to match: be it, start with it, end with it, hold it.
IS, STARTS, ENDS, HOLDS = "is", "starts", "ends", "holds"


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
class Needs:
    """What the catalog's words must hold for the keyword's tiers to match a name, as (how, text)
    lookups, every one of them found. `starting`, for exact, prefix and word: the keyword's words
    as words, the last one starting one. `inside`, for the fragment: its first word ending a word
    (holding one, when it is the only one), the middle ones as words, the last one starting one."""

    starting: tuple[tuple[str, str], ...]
    inside: tuple[tuple[str, str], ...]


def needs(word: Keyword) -> Needs:
    """The lookups each tier needs found (a word ending or part shorter than MIN_INSIDE is not
    looked up: it is taken as found)."""
    if len(word.words) == 1:
        only = word.words[0]
        return Needs(((STARTS, only),), ((HOLDS, only),) if len(only) >= MIN_INSIDE else ())
    first, *middle, last = word.words
    between = tuple((IS, w) for w in middle)
    ending = ((ENDS, first),) if len(first) >= MIN_INSIDE else ()
    return Needs(((IS, first), *between, (STARTS, last)), (*ending, *between, (STARTS, last)))


@dataclass(frozen=True, slots=True)
class StandIn:
    """What may stand for a long word of the keyword in a name: a catalog word one typo from it
    (`first` alone), or a split - its first word, and the words its second may be (`then`; none
    when the second was typed as one letter, then any word may follow)."""

    first: str
    then: tuple[str, ...] = ()
    split: bool = False


@dataclass(frozen=True, slots=True)
class Near:
    """The rows a typo pattern can match: per long word of the keyword, the keyword's other words,
    the stand-ins for it, and whether it is the keyword's last word (then a name's word may
    continue a stand-in; else the keyword's last word is among the others, typed so far). `exact`: a row
    holding a stand-in matches a pattern (one word typed, no split); else the patterns decide
    among those rows (the other words' order, a split's space)."""

    branches: list[tuple[list[str], list[StandIn], bool]]  # (others, stand-ins, is the last word)
    exact: bool


def near(word: Keyword, found: set[str]) -> Near | None:
    """For each long word, its stand-ins among the catalog's words `found` by `lookups`. None when
    no row can match."""
    last = len(word.words) - 1
    found = {w for w in found if w.isalnum()}  # a word written by hand outside `fold` is not a term
    branches = []
    exact = len(word.words) == 1
    for place in word.long_words():
        end = "%" if place == last else ""
        variants = [_like(v + end) for v in word.typo_variants(place)]
        stand_ins = [StandIn(w) for w in sorted(found) if any(v.match(w) for v in variants)]
        for head, tail in _split(word.words[place]):
            if head not in found:
                continue
            if len(tail) < MIN_PREFIX and end:
                stand_ins.append(StandIn(head, split=True))
                exact = False
                continue
            second = _like(tail + end)
            tails = tuple(sorted(w for w in found if second.match(w)))
            if tails:
                stand_ins.append(StandIn(head, tails, split=True))
                exact = False
        if stand_ins:
            others = [w for i, w in enumerate(word.words) if i != place]
            branches.append((others, list(dict.fromkeys(stand_ins)), place == last))
    return Near(branches, exact) if branches else None


@dataclass(frozen=True, slots=True)
class NearQuery:
    """`Near` as PostgreSQL reads it: one full-text query over the names' words."""

    query: str
    exact: bool


def near_query(word: Keyword, found: set[str]) -> NearQuery | None:
    """Each branch the keyword's other words (the last as a prefix) and one of the stand-ins."""
    rows = near(word, found)
    if rows is None:
        return None
    branches = []
    for others, stand_ins, is_last in rows.branches:
        terms = [_term(w) for w in others]
        if not is_last:
            terms[-1] += ":*"  # the keyword's last word, typed so far
        either = [
            f"({_term(s.first)} & ({' | '.join(_term(t) for t in s.then)}))" if s.then else _term(s.first)
            for s in stand_ins
        ]
        branches.append(" & ".join([*terms, f"({' | '.join(dict.fromkeys(either))})"]))
    return NearQuery(" | ".join(f"({b})" for b in branches), rows.exact)


def near_phrases(word: Keyword, found: set[str]) -> tuple[list[str], bool] | None:
    """`Near` as SQLite reads it: the phrases of a folded name (" midnight", " sweet home ") that
    its trigram tables find, a row holding one of the stand-ins; the keyword's other words are left
    to the typo patterns, which decide unless the query is exact."""
    rows = near(word, found)
    if rows is None:
        return None
    phrases: dict[str, None] = {}
    for _, stand_ins, is_last in rows.branches:
        end = "" if is_last else " "  # the last word's stand-in may continue in the name
        for s in stand_ins:
            if not s.split:
                phrases[f" {s.first}{end}"] = None
            elif not s.then:
                phrases[f" {s.first} "] = None
            else:
                phrases.update(dict.fromkeys(f" {s.first} {t}{end}" for t in s.then))
    return list(phrases), rows.exact


def _like(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression over one word (`_` one character, `%` any run)."""
    parts = ("." if c == "_" else ".*" if c == "%" else re.escape(c) for c in pattern)
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def _term(word: str) -> str:
    """A word as a tsquery term. Folded words hold letters and digits only: quoted, nothing in
    them reads as an operator."""
    return f"'{word}'"
