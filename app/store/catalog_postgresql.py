"""Catalog search on PostgreSQL: the tiers of app/store/catalog.py through PostgreSQL's own indexes.

- words: full-text search, a GIN index over `to_tsvector('simple', search_key)` read as a phrase
  whose last word is a prefix (`crazy <-> in:*`);
- fragments: `pg_trgm`'s GIN index (`search_key gin_trgm_ops`), which answers `LIKE '%...%'`
  from trigrams;
- one typo: the catalog's words one typo from the keyword's, from `catalog_words`, then the rows
  holding one of them through the full-text index (app/store/catalog_vocabulary.py);
- each tier its own parenthesized branch, planned on its own: exact and prefix from the B-tree or
  the popularity index, whichever the planner finds cheaper; a text-index tier reads at most
  `WINDOW` matches from its GIN index and ranks those (for a word in tens of thousands of names,
  the most popular of the first 5,000 found - the exact and prefix tiers come before it anyway);
- profile figures recomputed set-wise (one pass over the credits per figure), not row by row.

Migration 0020 makes the indexes (and the `pg_trgm` extension, trusted: no superuser needed),
0026 the vocabulary."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import text

from app.store.catalog import NAMES, TABLES, KeywordSearch, SqlCatalog
from app.store.catalog_keyword import EXACT, PREFIX, Keyword
from app.store.catalog_vocabulary import IS, STARTS, near_query
from app.store.statements import run
from app.store.unit_of_work import unit_of_work

# The tables a catalog load writes (their indexes and foreign keys are set aside meanwhile).
LOADED = (
    "profiles", "albums", "tracks", "track_isrcs", "track_artists", "credits", "credit_role_links",
    "credit_roles", "chart_rows",
)  # fmt: skip
# A popularity floor, per table, kept this long by each process: it only steers which rows are read
# first (see PostgresCatalog._floor), so a stale one costs time, never a wrong answer.
FLOOR_SECONDS = 300.0
_floors: dict[tuple[str, str, int], tuple[float, int | None]] = {}


class PostgresCatalog(SqlCatalog):
    def _text_match(self, kind: str, name: str) -> str:
        return f"search_key LIKE :{name}"

    def _any_match(self, kind: str, names: list[str], params: dict[str, Any]) -> str:
        """The rows the full-text index finds holding a catalog word one typo from the keyword's
        (`:near`, app/store/catalog_vocabulary.py), and of those the ones a pattern matches -
        unless the query says exactly what the patterns do (`near_exact`: one word typed, no
        split), then the patterns need not be read. They are checked through an expression no
        index answers (`search_key || ''`): the planner prices them as a filter, without reading
        each against the column's statistics."""
        near = f"{self._words_match()} @@ to_tsquery('simple', :near)"
        if params["near_exact"]:
            return near
        anchored = " OR ".join(f"(search_key || '') LIKE :{n}" for n in names)
        return f"{near} AND ({anchored})"

    def _words_like(self, count: int) -> str:
        """One statement of ORs: each lookup a B-tree range or a trigram read of `catalog_words`."""
        return f"SELECT word FROM catalog_words WHERE {' OR '.join(f'word LIKE :w{i}' for i in range(count))}"

    def _word_is(self, how: str, name: str) -> str:
        """As the base class; an ending or a part through the words' trigram index."""
        return super()._word_is(how, name) if how in (IS, STARTS) else f"word LIKE :{name}"

    def _near(self, word: Keyword, found: set[str]) -> dict[str, Any] | None:
        """`:near` as a full-text query over the names' words."""
        near = near_query(word, found)
        return None if near is None else {"near": near.query, "near_exact": near.exact}

    @staticmethod
    def _words_match() -> str:
        return "to_tsvector('simple', search_key)"

    def _word_match(self, kind: str) -> str:
        return f"{self._words_match()} @@ to_tsquery('simple', :words)"

    @staticmethod
    def _branch(sql: str) -> str:
        return f"({sql})"

    def _tier_rows(self, kind: str, tier: int, columns: str) -> str:
        """Exact and prefix as the base class (a B-tree, or the popularity index with a cheap
        filter). A text-index tier reads its matches from the GIN index first - at most :window of
        them - and ranks those: PostgreSQL would otherwise walk the popularity index and test each
        row (a tsvector or a dozen patterns computed per row), for ever when its estimate is wrong."""
        if tier in (EXACT, PREFIX):
            return super()._tier_rows(kind, tier, columns)
        return (
            f"SELECT {columns} FROM (SELECT id, popularity, {NAMES[kind]} FROM {TABLES[kind]} "
            f"WHERE {self._tier_condition(kind, tier)} LIMIT :window) AS matched ORDER BY popularity DESC, id LIMIT :n"
        )

    # The rank whose popularity is the floor of a text tier's first read (see _floor).
    FLOOR_RANK = 20_000

    def _phase_ids(self, kind: str, phase: tuple[int, ...], params: dict[str, Any]) -> list[str]:
        """A text-index tier (a word, a fragment) is read among the popular rows first: see _popular_first."""
        if phase[0] in (EXACT, PREFIX):
            return super()._phase_ids(kind, phase, params)
        ranked = self._popular_first(kind, self._tier_condition(kind, phase[0]), params)
        return ranked if ranked is not None else super()._phase_ids(kind, phase, params)

    def _near_ids(self, kind: str, names: list[str], params: dict[str, Any], many: bool) -> list[str]:
        """Among the popular rows first when the patterns match many (see _popular_first); a few are read
        and ranked at once."""
        ranked = self._popular_first(kind, self._any_match(kind, names, params), params) if many else None
        return ranked if ranked is not None else super()._near_ids(kind, names, params, many)

    def _near_count(self, kind: str, search: KeywordSearch, params: dict[str, Any], widest: bool) -> int:
        """As the base class, with the matches read from the full-text index's bitmap: with a LIMIT
        the planner would rather walk the whole name index, testing each name against every
        pattern. A CTE is read as far as the count asks."""
        return int(
            run(
                text(
                    f"WITH near AS MATERIALIZED (SELECT search_key FROM {TABLES[kind]} WHERE {self._any_match(kind, search.names, params)}) "
                    f"SELECT count(*) FROM (SELECT 1 FROM near{self._unless_widest(kind, search, widest, ' WHERE ')} LIMIT :cap) AS hits"
                ),
                params,
            ).scalar_one()
        )

    def _popular_first(self, kind: str, condition: str, params: dict[str, Any]) -> list[str] | None:
        """The :n most popular rows meeting `condition`, read among the popular rows first (at least
        as popular as the table's floor); None when the table is too small to have a floor (then
        the caller reads the first :window matches and ranks those). Both indexes answer the first
        read: the text index's bitmap ANDed with the popularity index's range, so a keyword in tens
        of thousands of names reads from the table only its matches among the popular rows - and
        ranks them exactly, not the first :window found. Only when they are fewer than :n are the
        other matches read (up to :window), in the same statement: a rare keyword costs one plan."""
        floor = self._floor(kind)
        if floor is None:
            return None
        table = TABLES[kind]
        return list(
            run(
                text(
                    f"WITH popular AS MATERIALIZED (SELECT id, popularity FROM {table} WHERE {condition} "
                    "AND popularity >= :floor LIMIT :window) "
                    "SELECT id FROM (SELECT id, popularity FROM popular UNION ALL SELECT id, popularity FROM "
                    f"(SELECT id, popularity FROM {table} WHERE {condition} AND popularity < :floor LIMIT :window) AS rest "
                    "WHERE (SELECT count(*) FROM popular) < :n) AS matched ORDER BY popularity DESC, id LIMIT :n"
                ),
                {**params, "floor": floor},
            ).scalars()
        )

    def _floor(self, kind: str) -> int | None:
        """The popularity of the table's FLOOR_RANK-th most popular row (None when it has fewer
        rows: a small table needs no floor), from the popularity index alone, kept FLOOR_SECONDS."""
        key = (str(unit_of_work().engine.url), kind, self.FLOOR_RANK)
        now = time.monotonic()
        kept = _floors.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]
        floor = run(
            text(f"SELECT popularity FROM {TABLES[kind]} ORDER BY popularity DESC, id OFFSET :rank LIMIT 1"),
            {"rank": self.FLOOR_RANK},
        ).scalar()
        _floors[key] = (now + FLOOR_SECONDS, floor)
        return floor

    def sync_ids(self) -> None:
        """Each sequence moved past the largest id written."""
        for table in ("credits", "credit_roles", "chart_rows"):
            run(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                )
            )

    def clear(self) -> None:
        """The large tables emptied at once (TRUNCATE), then what members and rosters point at."""
        run(
            text(
                "TRUNCATE credit_role_links, credits, chart_rows, track_artists, track_isrcs, tracks, albums, "
                "profile_collaborators, catalog_words"
            )
        )
        super().clear()

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """COPY is fastest into bare tables: the catalog tables' secondary indexes and foreign keys
        are dropped first and made again after (each index built once, each key checked in one
        pass), all in the caller's transaction; the planner's statistics are refreshed last."""
        run(text("SET LOCAL maintenance_work_mem = '512MB'"))
        indexes = run(
            text(
                "SELECT quote_ident(ic.relname), pg_get_indexdef(i.indexrelid) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid "
                "WHERE c.relname = ANY(:tables) AND c.relnamespace = current_schema()::regnamespace "
                "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
            ),
            {"tables": list(LOADED)},
        ).all()
        keys = run(
            text(
                "SELECT conrelid::regclass::text, quote_ident(conname), pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE contype = 'f' AND conrelid::regclass::text = ANY(:tables)"
            ),
            {"tables": list(LOADED)},
        ).all()
        for table, name, _ in keys:
            run(text(f"ALTER TABLE {table} DROP CONSTRAINT {name}"))
        for name, _ in indexes:
            run(text(f"DROP INDEX {name}"))
        yield
        for _, definition in indexes:
            run(text(definition))
        for table, name, definition in keys:
            run(text(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}"))
        for table in LOADED:
            run(text(f"ANALYZE {table}"))

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """COPY `rows` into `table` on the unit of work's connection (psycopg's copy protocol)."""
        if not rows:
            return 0
        dbapi = unit_of_work().connection().connection.dbapi_connection
        with dbapi.cursor() as cursor, cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:  # type: ignore[union-attr]
            for row in rows:
                copy.write_row(row)
        return len(rows)

    def refresh_profile_stats(self) -> None:
        run(text("SET LOCAL work_mem = '256MB'"))
        for statement in _REFRESH:
            run(text(statement))
        self._keep_collaborators()

    def after_load(self) -> None:
        """After the load's commit: VACUUM sets the visibility map, so index-only scans (the
        collaborators', the counts') need not visit the rows COPY wrote; ANALYZE the statistics.
        On a pooled connection of its own, outside SQLAlchemy's statement path: that path begins a
        transaction at the first statement that is not a SELECT (app/store/unit_of_work.py), and
        VACUUM refuses to run in one."""
        raw = unit_of_work().engine.raw_connection()
        try:
            driver: Any = raw.driver_connection
            driver.autocommit = True
            with driver.cursor() as cursor:
                for table in (*LOADED, "profile_collaborators"):
                    cursor.execute(f"VACUUM (ANALYZE) {table}")
            driver.autocommit = False
        finally:
            raw.close()


_REFRESH = (
    "UPDATE profiles SET popularity = 0, credit_count = 0, collaborator_count = 0, common_roles = '[]' "
    "WHERE credit_count <> 0 OR popularity <> 0 OR collaborator_count <> 0",
    "UPDATE profiles p SET credit_count = s.n, popularity = s.top FROM ("
    "SELECT c.profile_id, count(*) AS n, max(t.popularity) AS top FROM credits c JOIN tracks t ON t.id = c.track_id "
    "GROUP BY c.profile_id) s WHERE p.id = s.profile_id",
    "UPDATE profiles p SET collaborator_count = s.n FROM ("
    "WITH pairs AS (SELECT DISTINCT profile_id, track_id FROM credits) "
    "SELECT m.profile_id, count(DISTINCT o.profile_id) AS n FROM pairs m JOIN pairs o "
    "ON o.track_id = m.track_id AND o.profile_id <> m.profile_id GROUP BY m.profile_id) s WHERE p.id = s.profile_id",
    "UPDATE profiles p SET common_roles = s.roles FROM ("
    "SELECT profile_id, to_json((array_agg(name ORDER BY n DESC, name))[1:3]) AS roles FROM ("
    "SELECT c.profile_id, r.name, count(*) AS n FROM credits c JOIN credit_role_links l ON l.credit_id = c.id "
    "JOIN credit_roles r ON r.id = l.role_id GROUP BY c.profile_id, r.name) held GROUP BY profile_id) s "
    "WHERE p.id = s.profile_id",
)
