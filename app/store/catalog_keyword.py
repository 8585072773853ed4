"""A keyword as search reads it (app/store/catalog.py): folded, its words, the tiers it can match,
and the typo variants of its long words - pure, shared by the stores' searches and the
vocabulary's lookups (app/store/catalog_vocabulary.py)."""

from __future__ import annotations

from dataclasses import dataclass

from app.models.catalog import fold

FUZZY_MIN = 5  # letters a word needs before one typo is forgiven
FUZZY_WORDS = 2  # the long words of a keyword that get typo variants (the first two)
FUZZY_LONGEST = 16  # a longer word is matched as typed: at most 2 x 64 variants in one statement
EXACT, PREFIX, WORD, FRAGMENT, FUZZY = range(5)


@dataclass(frozen=True, slots=True)
class Keyword:
    """A keyword as search reads it: folded (" beyo "), its words, and the patterns of each tier."""

    key: str  # " beyo ": the exact key
    words: list[str]

    @property
    def core(self) -> str:
        return self.key.strip()

    @property
    def prefix_range(self) -> tuple[str, str]:
        """The B-tree range of keys starting with the keyword (bytewise order on both stores)."""
        return starting(" " + self.core)

    @property
    def tiers(self) -> tuple[int, ...]:
        length = len(self.core)
        if length >= 3:
            return (EXACT, PREFIX, WORD, FRAGMENT)
        return (EXACT, PREFIX, WORD) if length == 2 else (EXACT, PREFIX)

    def long_words(self) -> list[int]:
        """The places of the words that get typo variants: the first FUZZY_WORDS of FUZZY_MIN to
        FUZZY_LONGEST letters."""
        return [i for i, w in enumerate(self.words) if FUZZY_MIN <= len(w) <= FUZZY_LONGEST][:FUZZY_WORDS]

    def typo_variants(self, place: int) -> set[str]:
        """The word at `place` with one typo, as LIKE patterns: a letter changed or added (`_`),
        dropped, or two neighbours swapped."""
        word = self.words[place]
        variants = set()
        for j in range(len(word)):
            variants.add(word[:j] + "_" + word[j + 1 :])  # changed
            variants.add(word[:j] + word[j + 1 :])  # dropped
            if j + 1 < len(word):
                variants.add(word[:j] + word[j + 1] + word[j] + word[j + 2 :])  # swapped
        for j in range(len(word) + 1):
            variants.add(word[:j] + "_" + word[j:])  # added
        variants.discard(word)
        return variants

    def fuzzy_patterns(self) -> list[str]:
        """LIKE patterns for one typo in one long word, each anchored at a word start (the
        keyword's other words as typed). A keyword without a long word has none."""
        patterns: set[str] = set()
        for i in self.long_words():
            for variant in self.typo_variants(i):
                patterns.add("% " + " ".join([*self.words[:i], variant, *self.words[i + 1 :]]) + "%")
        return sorted(patterns)


def starting(prefix: str) -> tuple[str, str]:
    """The range of the texts starting with `prefix`: from it, up to the prefix with its last
    letter the next one (bytewise order, as both stores compare)."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def keyword(raw: str) -> Keyword | None:
    """The keyword folded, or None when nothing searchable is left ("%", "!!")."""
    key = fold(raw)
    return Keyword(key, key.split()) if key else None
