"""Catalog search, type-ahead and collaborators: the catalog reads whose SQL depends on the store's
text index. SQLite's (FTS5 trigram tables over the names and over the catalog's words, kept in
step by triggers) is here; PostgreSQL's (pg_trgm and full-text GIN indexes) is
app/store/catalog_postgresql.py.

What a search matches, in the order it ranks (ties: the more popular first, then the id):

    0 exact      the whole name, folded ("beyonce" finds "Beyoncé")       B-tree equality
    1 prefix     the name starts with the keyword ("beyo")                 B-tree range
    2 word       a word of the name starts with it ("crazy in" finds "Drunk Crazy In Love")
    3 fragment   it occurs anywhere in the name (3 letters or more)        text index
    4 fuzzy      one typo (a letter changed, added, dropped or two swapped) in a word of five
                 letters or more ("beyonse"): the catalog's words one typo
                 away, then the names holding one (catalog_vocabulary.py)  text index

Names and keywords are compared folded (app/models/catalog.py `fold`), so every store matches the
same text the same way. A one-letter keyword matches exact and prefix only, a two-letter one
words too: a shorter fragment is in too many names to be worth an index. Each tier reads at most
`limit` rows through an index, most popular first, so no search reads a whole table, and the
number of matches (`total`) is counted up to `TOTAL_CAP` - a search is not a way to list the
catalog. Fuzzy variants are asked for only when the other tiers found fewer than `limit`, and a
search's buckets share one lookup of the catalog's words. Before any tier, a keyword of three
letters or more asks the catalog's words whether they hold what its tiers need (one statement;
app/store/catalog_vocabulary.py `needs`): a typo no word holds goes straight to the typo tier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import bindparam, text

from app.store.catalog_keyword import EXACT, FRAGMENT, PREFIX, WORD, Keyword, keyword, starting
from app.store.catalog_vocabulary import ENDS, HOLDS, IS, STARTS, lookups, near_phrases, needs
from app.store.statements import run
from app.store.unit_of_work import unit_of_work

KINDS = ("profile", "track", "album")
TABLES = {"profile": "profiles", "track": "tracks", "album": "albums"}
NAMES = {"profile": "name", "track": "title", "album": "title"}
TOTAL_CAP = 1000
# The most rows a text-index tier reads before ranking them (PostgreSQL; see catalog_postgresql.py).
WINDOW = 5000


@dataclass(frozen=True, slots=True)
class Hits:
    """A search bucket's answer: the ids ranked, and how many rows match (up to TOTAL_CAP)."""

    total: int
    ids: list[str]


@dataclass(frozen=True, slots=True)
class KeywordSearch:
    """One keyword's search, what its buckets share: the tiers the catalog's words leave the
    keyword (in rank order), the statements' parameters, the typo patterns' parameter names, and
    the typo lookup (made at most once, for the first bucket that asks)."""

    tiers: tuple[int, ...]
    params: dict[str, Any]
    names: list[str]
    typos: Callable[[], dict[str, Any] | None]

    @property
    def widest(self) -> int:
        """The last tier, whose rows hold every other tier's."""
        return self.tiers[-1]


@dataclass(frozen=True, slots=True)
class Suggestion:
    id: str
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class Collaborator:
    id: str
    name: str
    avatar_url: str | None
    shared: int


class SqlCatalog:
    """The catalog's searches on SQLite: B-tree for exact and prefix, FTS5 trigram for the rest."""

    # Credits from which a profile's collaborators are counted at load rather than per request.
    PRECOMPUTED_FROM = 1000

    def _text_match(self, kind: str, name: str) -> str:
        """A condition: the row's key matches the LIKE pattern bound as :name (through the text index)."""
        table = TABLES[kind]
        return f"rowid IN (SELECT rowid FROM {table}_search WHERE search_key LIKE :{name})"

    def _any_match(self, kind: str, names: list[str], params: dict[str, Any]) -> str:
        """The rows the trigram table finds holding a catalog word one typo from the keyword's
        (`:near`, phrases of the folded names: app/store/catalog_vocabulary.py), and of those the
        ones a typo pattern (bound as `names`) matches - unless the query says exactly what the
        patterns do (`near_exact`)."""
        table = TABLES[kind]
        near = f"rowid IN (SELECT rowid FROM {table}_search WHERE {table}_search MATCH :near)"
        if params["near_exact"]:
            return near
        return f"{near} AND ({' OR '.join(f'search_key LIKE :{n}' for n in names)})"

    def _word_match(self, kind: str) -> str:
        return self._text_match(kind, "word")

    def _tier_condition(self, kind: str, tier: int) -> str:
        if tier == EXACT:
            return "search_key = :exact"
        if tier == PREFIX:
            return "search_key >= :low AND search_key < :high"
        if tier == WORD:
            return self._word_match(kind)
        return self._text_match(kind, "fragment")

    @staticmethod
    def _branch(sql: str) -> str:
        return f"SELECT * FROM ({sql})"

    def _params(self, word: Keyword) -> dict[str, Any]:
        low, high = word.prefix_range
        return {
            "exact": word.key,
            "low": low,
            "high": high,
            "word": "% " + word.core + "%",
            "words": _tsquery(word),
            "fragment": "%" + word.core + "%",
        }

    def _tier_rows(self, kind: str, tier: int, columns: str) -> str:
        """One tier's rows, most popular first, at most :n. The planner picks the index: the
        popularity index read until :n rows match for a common keyword, the B-tree or text index and
        a small sort for a rare one."""
        return (
            f"SELECT {columns} FROM {TABLES[kind]} WHERE {self._tier_condition(kind, tier)} "
            "ORDER BY popularity DESC, id LIMIT :n"
        )

    def _widest(self, kind: str, search: KeywordSearch) -> str:
        return self._tier_condition(kind, search.widest)

    def search(self, kinds: Sequence[str], raw: str, limit: int) -> dict[str, Hits]:
        """Each kind's bucket for one keyword. The buckets share what the keyword alone decides:
        its patterns, the tiers the catalog's words leave it (asked first, once), and the catalog
        words one typo from it (looked up once, and only when a bucket's other tiers found fewer
        than `limit`)."""
        word = keyword(raw)
        if word is None:
            return {kind: Hits(0, []) for kind in kinds}
        params = {**self._params(word), "n": limit, "cap": TOTAL_CAP, "window": WINDOW}
        patterns = word.fuzzy_patterns()
        names = [f"fuzzy{i}" for i in range(len(patterns))]

        @cache
        def typos() -> dict[str, Any] | None:
            return self._fuzzy_params(word, names, patterns)

        search = KeywordSearch(self._possible_tiers(word), params, names, typos)
        return {kind: self._bucket(kind, search) for kind in kinds}

    def _possible_tiers(self, word: Keyword) -> tuple[int, ...]:
        """The keyword's tiers that can match a name, by what the catalog's words hold
        (app/store/catalog_vocabulary.py `needs`), asked in one statement: a keyword no word holds
        (a typo, mostly) reads no name in them. A keyword too short for the fragment tier is not
        asked about: its tiers are B-tree and word-index reads, each about as cheap as the question."""
        if FRAGMENT not in word.tiers:
            return word.tiers
        need = needs(word)
        asked = list(dict.fromkeys((*need.starting, *need.inside)))
        params: dict[str, str] = {}
        for i, (how, part) in enumerate(asked):
            if how == STARTS:
                params[f"h{i}"], params[f"h{i}_end"] = starting(part)
            else:
                params[f"h{i}"] = {IS: part, ENDS: "%" + part, HOLDS: "%" + part + "%"}[how]
        checks = ", ".join(
            f"EXISTS (SELECT 1 FROM catalog_words WHERE {self._word_is(how, f'h{i}')})"
            for i, (how, _) in enumerate(asked)
        )
        held = dict(zip(asked, run(text(f"SELECT {checks}"), params).one(), strict=True))
        starts, inside = all(held[a] for a in need.starting), all(held[a] for a in need.inside)
        return tuple(t for t in word.tiers if (inside if t == FRAGMENT else starts))

    def _word_is(self, how: str, name: str) -> str:
        """A condition on `catalog_words`: the word is, starts with, or ends with or holds (a LIKE
        pattern, through the words' trigram table) the text bound as `name`."""
        if how == IS:
            return f"word = :{name}"
        if how == STARTS:
            return f"word >= :{name} AND word < :{name}_end"
        return f"rowid IN (SELECT rowid FROM catalog_words_search WHERE word LIKE :{name})"

    def _bucket(self, kind: str, search: KeywordSearch) -> Hits:
        """One kind's hits: the tiers in rank order until `limit` are found, then the typo tier."""
        limit = search.params["n"]
        found: dict[str, None] = {}
        for phase in _phases(search.tiers):
            found.update(dict.fromkeys(self._phase_ids(kind, phase, search.params)))
            if len(found) >= limit:  # a later tier ranks below every row found: none of it is shown
                return Hits(self._count(kind, search), list(found)[:limit])
        # Every tier was read, the widest last (its rows hold every other tier's), and it found fewer
        # than `limit`: `found` is every row the tiers match, and so their count.
        ids = list(found)
        near = search.typos() if search.names else None
        if near is None:
            return Hits(len(ids), ids)
        fuzzy = {**search.params, **near, "n": limit + len(ids)}
        # Only the rows the widest tier missed can be new here.
        only = self._near_count(kind, search, fuzzy, widest=bool(ids))
        if only:
            seen = set(ids)
            nearest = self._near_ids(kind, search.names, fuzzy, only >= TOTAL_CAP)
            ids += [i for i in nearest if i not in seen][: limit - len(ids)]
        return Hits(min(TOTAL_CAP, len(found) + only), ids)

    def _phase_ids(self, kind: str, phase: tuple[int, ...], params: dict[str, Any]) -> list[str]:
        """The ids one round trip of tiers finds (at most :n per tier), ranked."""
        branches = [self._branch(self._tier_rows(kind, tier, f"id, {tier} AS tier, popularity")) for tier in phase]
        return [row[0] for row in run(text(_ranked(branches, "tier, popularity DESC, id")), params)]

    def _count(self, kind: str, search: KeywordSearch) -> int:
        """How many rows match, up to :cap. The prefix tier is counted first, from the B-tree alone:
        a common keyword ("love") reaches the cap there without reading its text index's matches."""
        table, params = TABLES[kind], search.params
        count = "SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {condition} LIMIT :cap) AS hits"
        if PREFIX in search.tiers and search.widest != PREFIX:
            prefixed = run(
                text(count.format(table=table, condition=self._tier_condition(kind, PREFIX))), params
            ).scalar_one()
            if prefixed >= TOTAL_CAP:
                return int(prefixed)
        return int(run(text(count.format(table=table, condition=self._widest(kind, search))), params).scalar_one())

    def _fuzzy_params(self, word: Keyword, names: list[str], patterns: list[str]) -> dict[str, Any] | None:
        """The typo patterns bound to `names`, and the rows they can match (`:near`, `near_exact`)
        from the catalog's words one typo from the keyword's; None when there are none - then no
        name can match and no name is read."""
        near = self._near(word, self._vocabulary(lookups(word)))
        if near is None:
            return None
        return {**dict(zip(names, patterns, strict=True)), **near}

    def _vocabulary(self, wanted: list[str]) -> set[str]:
        """The catalog's words matching one of the LIKE patterns `wanted` (bound as :w0, :w1...),
        in one statement."""
        return set(run(text(self._words_like(len(wanted))), {f"w{i}": p for i, p in enumerate(wanted)}).scalars())

    def _words_like(self, count: int) -> str:
        """SQLite: each pattern a lookup of the words' trigram table (FTS5 answers one LIKE a
        query, so they are a union)."""
        union = " UNION ".join(f"SELECT rowid FROM catalog_words_search WHERE word LIKE :w{i}" for i in range(count))
        return f"SELECT word FROM catalog_words WHERE rowid IN ({union})"

    def _near(self, word: Keyword, found: set[str]) -> dict[str, Any] | None:
        """`:near` as an FTS5 query of the names' trigram tables: any of the stand-ins' phrases."""
        near = near_phrases(word, found)
        if near is None:
            return None
        phrases, exact = near
        return {"near": " OR ".join(f'"{p}"' for p in phrases), "near_exact": exact}

    def _near_ids(self, kind: str, names: list[str], params: dict[str, Any], many: bool) -> list[str]:
        """The fuzzy tier: at most :n ids matching one of the typo patterns bound as `names`, the
        most popular of the first :window found. `many`: the patterns match TOTAL_CAP rows or more."""
        return list(
            run(
                text(
                    f"SELECT id FROM (SELECT id, popularity FROM {TABLES[kind]} WHERE {self._any_match(kind, names, params)} "
                    "LIMIT :window) AS near ORDER BY popularity DESC, id LIMIT :n"
                ),
                params,
            ).scalars()
        )

    def _near_count(self, kind: str, search: KeywordSearch, params: dict[str, Any], widest: bool) -> int:
        """The rows only the fuzzy tier finds (a typo pattern, not the widest tier), up to :cap.
        `widest`: the widest tier matched a row (else no row need be tested against it)."""
        return int(
            run(
                text(
                    f"SELECT count(*) FROM (SELECT 1 FROM {TABLES[kind]} WHERE {self._any_match(kind, search.names, params)}"
                    f"{self._unless_widest(kind, search, widest, ' AND ')} LIMIT :cap) AS near"
                ),
                params,
            ).scalar_one()
        )

    def _unless_widest(self, kind: str, search: KeywordSearch, widest: bool, joiner: str) -> str:
        """The condition leaving out the widest tier's rows, when it has any."""
        return f"{joiner}NOT ({self._widest(kind, search)})" if widest else ""

    def autocomplete(self, raw: str, limit: int) -> list[Suggestion]:
        """Names starting with `raw` (then, from two letters, names with a word starting with it):
        exact before prefix before word, profiles before tracks before albums, most popular first."""
        word = keyword(raw)
        if word is None:
            return []
        found: dict[str, Suggestion] = {}
        for phase in _phases(tuple(t for t in word.tiers if t != FRAGMENT)):
            for row in self._suggestions(word, phase, limit):
                found.setdefault(row.id, Suggestion(row.id, row.name, row.kind))
            if len(found) >= limit:
                break
        return list(found.values())[:limit]

    def _suggestions(self, word: Keyword, tiers: tuple[int, ...], limit: int) -> Sequence[Any]:
        """The tiers' rows ranked, then each one's name by its id. A tier ranks ids and popularity
        alone, which the (search_key, popularity, id) index holds: a one-letter prefix's thousands
        of names are ranked from the index without reading a row for each."""
        branches = [
            self._branch(
                self._tier_rows(kind, tier, f"id, '{kind}' AS kind, {tier} AS tier, {order} AS kind_order, popularity")
            )
            for tier in tiers
            for order, kind in enumerate(KINDS)
        ]
        return run(
            text(_ranked(branches, "tier, kind_order, popularity DESC, id", also=f"{_NAME_BY_ID} AS name")),
            {**self._params(word), "n": limit, "window": WINDOW},
        ).all()

    def collaborators(self, profile_id: str, limit: int, offset: int) -> tuple[int, list[Collaborator]]:
        """The profiles sharing the most tracks with `profile_id` (most shared first, ties by id), and
        how many there are. A prolific profile's (PRECOMPUTED_FROM credits or more) were counted
        at load: a page of `profile_collaborators`' index. Anyone else's are counted now: the
        profile's tracks from its credits' unique index, everyone on them from (track, profile),
        both read from the index alone."""
        figures = run(_FIGURES, {"profile_id": profile_id}).first()
        if figures is None:
            return 0, []
        params = {"profile_id": profile_id, "limit": limit, "offset": offset}
        if figures.credit_count >= self.PRECOMPUTED_FROM:
            rows = run(_KEPT_COLLABORATORS, params).all()
            return figures.collaborator_count, [Collaborator(r.id, r.name, r.avatar_url, r.shared) for r in rows]
        rows = run(_COLLABORATORS, params).all()
        if rows:
            return rows[0].total, [Collaborator(r.id, r.name, r.avatar_url, r.shared) for r in rows]
        return run(_COLLABORATOR_COUNT, {"profile_id": profile_id}).scalar_one(), []

    # -- loading a whole catalog (`flask catalog generate`) -------------------------------------------

    def after_load(self) -> None:
        """After the load's commit (PostgreSQL vacuums; SQLite has nothing to do)."""

    def sync_ids(self) -> None:
        """After rows were written with explicit ids, the next id the database chooses must not
        collide with them (SQLite's follows the largest id by itself; PostgreSQL's sequences don't)."""

    def clear(self) -> None:
        """Remove every catalog row; members keep their accounts, not their profile link."""
        run(text("UPDATE users SET profile_id = NULL WHERE profile_id IS NOT NULL"))
        for table in _CLEARED:
            run(text(f"DELETE FROM {table}"))
        run(text("UPDATE credit_roles SET parent_id = NULL"))
        run(text("DELETE FROM credit_roles"))

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Around a load of many rows: on SQLite nothing to set aside (the text index follows by
        its triggers)."""
        yield

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Insert `rows` (tuples in `columns` order) into `table`, in the caller's transaction."""
        if not rows:
            return 0
        marks = ", ".join("?" for _ in columns)
        connection = unit_of_work().connection()
        connection.exec_driver_sql(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", [tuple(r) for r in rows]
        )
        return len(rows)

    def refresh_profile_stats(self) -> None:
        """Compute each profile's figures from the credits (after a load; a full pass)."""
        for statement in _REFRESH:
            run(text(statement))
        run(text(_COMMON_ROLES_SQLITE))
        self._keep_collaborators()

    def _keep_collaborators(self) -> None:
        run(text("DELETE FROM profile_collaborators"))
        run(_KEEP_COLLABORATORS, {"heavy": self.PRECOMPUTED_FROM})


def _phases(tiers: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The tiers in the round trips that ask for them: exact and prefix together (B-tree reads,
    cheap), then each text-index tier only while fewer than `limit` rows were found - for a common
    keyword the B-tree tiers fill the page and the text index is never read."""
    first = tuple(t for t in tiers if t in (EXACT, PREFIX))
    return [phase for phase in [first, *((t,) for t in tiers if t not in first)] if phase]


def _ranked(branches: list[str], order: str, also: str = "") -> str:
    """The tiers' branches as one statement (with the columns `also` computed for each row ranked).
    It starts with SELECT: on PostgreSQL a statement that does not opens a transaction
    (app/store/unit_of_work.py), and a search only reads."""
    columns = f"ranked.*, {also}" if also else "*"
    return f"SELECT {columns} FROM ({' UNION ALL '.join(branches)}) AS ranked ORDER BY {order}"


# A ranked row's name, read by its kind and id (a primary-key lookup).
_NAME_BY_ID = (
    "CASE ranked.kind "
    + " ".join(f"WHEN '{k}' THEN (SELECT {NAMES[k]} FROM {TABLES[k]} WHERE id = ranked.id)" for k in KINDS)
    + " END"
)


def _tsquery(word: Keyword) -> str:
    """The words as a PostgreSQL phrase query, the last one a prefix: "crazy <-> in:*". The folded
    words hold letters and digits only, nothing tsquery would read as an operator."""
    return " <-> ".join([*word.words[:-1], word.words[-1] + ":*"])


_SHARED = (
    "SELECT o.profile_id AS id, count(DISTINCT o.track_id) AS shared "
    "FROM credits m JOIN credits o ON o.track_id = m.track_id "
    "WHERE m.profile_id = :profile_id AND o.profile_id <> :profile_id GROUP BY o.profile_id"
)
_COLLABORATORS = text(
    "SELECT p.id, p.name, p.avatar_url, counted.shared, counted.total FROM ("
    f"SELECT id, shared, count(*) OVER () AS total FROM ({_SHARED}) AS pairs "
    "ORDER BY shared DESC, id LIMIT :limit OFFSET :offset) AS counted JOIN profiles p ON p.id = counted.id "
    "ORDER BY counted.shared DESC, p.id"
).bindparams(bindparam("limit"), bindparam("offset"))
_FIGURES = text("SELECT credit_count, collaborator_count FROM profiles WHERE id = :profile_id")
_KEPT_COLLABORATORS = text(
    "SELECT p.id, p.name, p.avatar_url, k.shared FROM profile_collaborators k JOIN profiles p ON p.id = k.collaborator_id "
    "WHERE k.profile_id = :profile_id ORDER BY k.shared DESC, k.collaborator_id LIMIT :limit OFFSET :offset"
)
_KEEP_COLLABORATORS = text(
    "INSERT INTO profile_collaborators (profile_id, collaborator_id, shared) "
    "SELECT m.profile_id, o.profile_id, count(DISTINCT o.track_id) FROM credits m JOIN credits o "
    "ON o.track_id = m.track_id AND o.profile_id <> m.profile_id "
    "WHERE m.profile_id IN (SELECT id FROM profiles WHERE credit_count >= :heavy) GROUP BY m.profile_id, o.profile_id"
)
_COLLABORATOR_COUNT = text(f"SELECT count(*) FROM ({_SHARED}) AS shared")

# Children first (SQLite does not enforce the foreign keys; PostgreSQL does).
_CLEARED = (
    "credit_role_links",
    "credits",
    "chart_rows",
    "track_artists",
    "track_isrcs",
    "tracks",
    "albums",
    "roster_profiles",
    "profile_collaborators",
    "profiles",
    "catalog_words",  # the names' words (the triggers only add): a new catalog starts a new vocabulary
)

_REFRESH = (
    "UPDATE profiles SET "
    "credit_count = (SELECT count(*) FROM credits c WHERE c.profile_id = profiles.id), "
    "popularity = COALESCE((SELECT max(t.popularity) FROM credits c JOIN tracks t ON t.id = c.track_id "
    "WHERE c.profile_id = profiles.id), 0), "
    "collaborator_count = (SELECT count(DISTINCT o.profile_id) FROM credits c JOIN credits o "
    "ON o.track_id = c.track_id AND o.profile_id <> c.profile_id WHERE c.profile_id = profiles.id)",
)
# The three roles a profile holds most (ties by name), as a JSON list.
_COMMON_ROLES_SQLITE = (
    "UPDATE profiles SET common_roles = COALESCE((SELECT json_group_array(name) FROM ("
    "SELECT r.name AS name FROM credits c JOIN credit_role_links l ON l.credit_id = c.id "
    "JOIN credit_roles r ON r.id = l.role_id WHERE c.profile_id = profiles.id "
    "GROUP BY r.name ORDER BY count(*) DESC, r.name LIMIT 3)), '[]')"
)
