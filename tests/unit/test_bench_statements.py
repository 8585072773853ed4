"""bench/statements.py's arithmetic: pg_stat_statements' rows for one database become round trips
per operation by kind of statement, and the report's rows. Fed made-up rows, so the counting is
checked, not the machine (the tool itself runs against a private cluster and the peer)."""

from __future__ import annotations

import pytest

from bench.statements import kind_of, per_operation, render


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("SELECT payload FROM oidc_payloads WHERE id = $1", "SELECT"),
        ("  select 1", "SELECT"),
        ("INSERT INTO audit_events (action) VALUES ($1)", "INSERT"),
        ("UPDATE authorization_codes SET used_at=$1 WHERE code_hash = $2 RETURNING id", "UPDATE"),
        ("DELETE FROM oidc_payloads WHERE id = $1 AND type = $2", "DELETE"),
        ("BEGIN ISOLATION LEVEL READ COMMITTED", "BEGIN"),
        ("COMMIT", "COMMIT"),
        ("ROLLBACK", "ROLLBACK"),
        ("WITH spent AS (UPDATE t SET x = 1 RETURNING id) SELECT id FROM spent", "other"),
        ("SET search_path TO public", "other"),
        ("", "other"),
    ],
)
def test_a_statement_is_counted_by_its_first_word(query, kind):
    assert kind_of(query) == kind


def test_calls_are_summed_by_kind_and_divided_by_the_batch():
    rows = [
        ("SELECT a FROM t WHERE id = $1", 60, 3.0, 0),
        ("SELECT b FROM u WHERE id = $1", 40, 1.0, 0),
        ("INSERT INTO t VALUES ($1)", 20, 2.0, 4000),
        ("BEGIN ISOLATION LEVEL READ COMMITTED", 20, 0.2, 0),
        ("COMMIT", 18, 0.1, 0),
        ("ROLLBACK", 2, 0.0, 0),
        ("SET x = 1", 1, 0.0, 0),
    ]
    p = per_operation(rows, 20)
    assert p.round_trips == pytest.approx(161 / 20)
    assert p.by_kind["SELECT"] == pytest.approx(5.0)
    assert p.by_kind["INSERT"] == pytest.approx(1.0)
    assert p.by_kind["UPDATE"] == 0
    assert p.by_kind["BEGIN"] == pytest.approx(1.0)
    assert p.by_kind["COMMIT"] == pytest.approx(0.9)
    assert p.by_kind["ROLLBACK"] == pytest.approx(0.1)
    assert p.by_kind["other"] == pytest.approx(0.05)
    assert p.executor_ms == pytest.approx(6.3 / 20)
    assert p.wal_bytes == pytest.approx(200)


def test_the_report_has_a_row_per_operation_and_provider():
    ours = per_operation([("SELECT 1", 10, 1.0, 0), ("BEGIN", 5, 0.0, 0), ("COMMIT", 5, 0.0, 0)], 5)
    peer = per_operation([("SELECT 1", 10, 0.5, 0), ("INSERT INTO t VALUES (1)", 15, 1.5, 6000)], 5)
    report = render({"token": {"Credits ID": ours, "node oidc-provider": peer}}, 5)
    rows = [line for line in report.splitlines() if line.startswith("| token")]
    assert rows == [
        "| token | Credits ID | 4.0 | 2.0 | 0.0 | 0.0 | 0.0 | 1.0 | 1.0 | 0.0 | 0.200 | 0 |",
        "| token | node oidc-provider | 5.0 | 2.0 | 3.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.400 | 1,200 |",
    ]
    assert "mean of 5" in report
