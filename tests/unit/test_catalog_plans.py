"""Every catalog read is an index read, on both stores: each statement the catalog API sends is
explained, and no plan reads a whole table (as the sign-in's lookups are held in
tests/integration/test_query_counts.py). SQLite: every catalog table is SEARCHed (an index
seek), and a full-text table is scanned only through its index (`VIRTUAL TABLE INDEX n:L...`).
PostgreSQL picks plans by statistics and would scan the tiny test tables; with sequential scans
priced out (`enable_seqscan = off`) it must still find an index path for every statement."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import event

from app.core.extensions import db, limiter
from tests.api_support import database_engines, make_catalog, uid
from tests.key_support import index_catalog, key_header, make_key

CATALOG_TABLES = {
    "profiles", "tracks", "albums", "credits", "credit_role_links", "track_artists", "track_isrcs", "chart_rows",
    "catalog_words",
}  # fmt: skip
# credit_roles is the taxonomy (a few dozen rows, read whole by `GET /roles`, as the spec says).


def _requests(mine: str) -> list[tuple[str, str, dict | None]]:
    gets = [
        f"/v1/profile/{mine}",
        f"/v1/profile/{mine}/credits?limit=50",
        f"/v1/profile/{mine}/credits?limit=50&offset=10000",
        f"/v1/profile/{mine}/credits?limit=5&offset=20",
        f"/v1/profile/{mine}/collaborators",
        f"/v1/profile/{mine}/collaborators?offset=10000",
        f"/v1/profile/{mine}/charts",
        f"/v1/track/id/{uid(3, 2)}",
        "/v1/track/isrc/USAAA2000003",
        "/v1/track/spotify/sp3",
        f"/v1/track/id/{uid(3, 2)}/albums",
        f"/v1/album/id/{uid(3, 3)}",
        "/v1/album/upc/000000000003",
        "/v1/album/spotify/alb3",
        f"/v1/album/id/{uid(3, 3)}/credits",
        "/v1/search/autocomplete?q=a",
        "/v1/search/autocomplete?q=ad",
        "/v1/search/autocomplete?q=trac",
        f"/v1/profiles/search?names=ada&track_ids={uid(2, 2)}",
        "/v1/profiles/search?names=ada&spotify_track_ids=sp1",
    ]
    searches = ["a", "ad", "otto", "track 1", "ther", "albun", "othre", "nothing like it"]
    return [("get", path, None) for path in gets] + [("post", "/v1/search", {"keyword": k}) for k in searches]


@pytest.fixture
def statements(app):
    limiter.reset()
    catalog = make_catalog(credits=45)
    index_catalog()
    secret = make_key("secret")[1]
    client = app.test_client()
    seen: list[tuple[str, object]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if not executemany:
            seen.append((statement, parameters))

    engines = database_engines()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        for method, path, body in _requests(catalog.mine):
            response = getattr(client, method)(path, headers=key_header(secret), json=body)
            assert response.status_code == 200, (path, response.get_data(as_text=True))
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)
    reads = [
        (sql, params)
        for sql, params in seen
        if sql.lstrip().upper().startswith("SELECT") and set(re.findall(r"\w+", sql.lower())) & CATALOG_TABLES
    ]
    assert len(reads) > 40
    return reads


def _sqlite_whole_table_reads(plan: list[str]) -> list[str]:
    """The plan's lines that read a table whole: a SCAN of anything but a subquery's result (its
    CO-ROUTINE or MATERIALIZE), a full-text table through its index, or the one row of a SELECT
    without FROM (SCAN CONSTANT ROW)."""
    derived = {m.group(1) for line in plan if (m := re.match(r"(?:CO-ROUTINE|MATERIALIZE) (\S+)", line))}
    bad = []
    for line in plan:
        scanned = re.match(r"SCAN (\S+)", line)
        if (
            scanned is None
            or scanned.group(1) in derived
            or scanned.group(1).startswith("(")
            or line == "SCAN CONSTANT ROW"
        ):
            continue
        if not re.search(r"VIRTUAL TABLE INDEX \d+:\S", line):
            bad.append(line)
    return bad


def test_the_check_sees_a_whole_table_read():
    connection = db.session.connection()
    if db.engine.dialect.name != "sqlite":
        # This checks the checker, whose SQLite half reads EXPLAIN QUERY PLAN lines; on PostgreSQL
        # the test below prices sequential scans out instead, so there is no reader to check.
        pytest.skip("checks the SQLite plan reader; PostgreSQL's plans are checked with seqscan off")
    for sql in (
        "SELECT id FROM tracks WHERE title LIKE '%x%'",
        "SELECT rowid FROM tracks_search WHERE search_key LIKE '%ab%' OR rowid > 0",
        "SELECT count(*) FROM (SELECT id FROM tracks ORDER BY popularity LIMIT 5) AS hits",
    ):
        plan = [row[-1] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql)]
        assert _sqlite_whole_table_reads(plan), (sql, plan)


def test_every_catalog_read_is_an_index_read(statements):
    connection = db.session.connection()
    if db.engine.dialect.name == "sqlite":
        for sql, params in statements:
            plan = [row[-1] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)]
            assert not _sqlite_whole_table_reads(plan), (sql, plan)
        return
    connection.exec_driver_sql("SET enable_seqscan = off")
    try:
        for sql, params in statements:
            plan = [row[0] for row in connection.exec_driver_sql("EXPLAIN " + sql, params)]
            assert not any("Seq Scan" in line for line in plan), (sql, "\n".join(plan))
    finally:
        connection.exec_driver_sql("RESET enable_seqscan")
