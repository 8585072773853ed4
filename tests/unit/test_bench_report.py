"""bench/run.py's report: each of our rows beside the stack floor's and the peer's figures, with the
three ratios and the target mark the closing notes quote. Fed made-up results, so the arithmetic is
checked, not the machine."""

from __future__ import annotations

import json
from types import SimpleNamespace

from bench.run import render_report


def _group(name: str, cpu: float, p99: float = 5.0) -> dict:
    stat = lambda v: {"median": v, "min": v, "max": v, "runs": [v]}  # noqa: E731
    return {
        "group": name,
        "runs": [],
        "rps": stat(100.0),
        "p50_ms": stat(1.0),
        "p99_ms": stat(p99),
        "server_cpu_ms_per_op": stat(cpu),
        "client_cpu_ms_per_op": stat(0.1),
    }


def _write(tmp_path, name: str, groups: list[dict]):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"meta": {}, "results": groups}))
    return path


def _row(report: str, test: str) -> list[str]:
    line = next(line for line in report.splitlines() if line.startswith(f"| {test} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_rows_carry_the_floor_and_the_three_ratios(tmp_path):
    files = {
        "ours": _write(
            tmp_path,
            "ours",
            [
                _group("userinfo c=1", 1.2),
                _group("token(code+PKCE) c=1", 3.0),
                _group("v1-credits-first-page c=1", 8.0, p99=31.0),
            ],
        ),
        "ours-postgresql": _write(tmp_path, "ours-postgresql", [_group("userinfo c=1 [PostgreSQL]", 2.4)]),
        "stack-floor": _write(
            tmp_path, "stack-floor", [_group("userinfo c=1", 0.6), _group("token(code+PKCE) c=1", 1.5)]
        ),
        "peer": _write(tmp_path, "peer", [_group("userinfo c=1", 0.25), _group("token(code+PKCE) c=1", 1.5)]),
    }
    machine = {"cpu": "test", "cores": 2, "python": "3.11", "node": "v20", "load_before": [0.1], "load_after": [0.2]}
    report = render_report(
        files, machine, SimpleNamespace(profile="quick", scale=1, workers=2, threads=4, server="granian")
    )

    userinfo = _row(report, "userinfo c=1")
    assert userinfo[4:10] == ["1.200", "0.600", "0.250", "4.80×", "2.40×", "2.00×"]
    assert userinfo[10] == "≤ 2.0× ✘"
    token = _row(report, "token(code+PKCE) c=1")
    assert token[7:11] == ["2.00×", "1.00×", "2.00×", "≤ 1.0× ✘"]
    # PostgreSQL rows compare with the peer only: the floor has no database
    pg = _row(report, "userinfo c=1 [PostgreSQL]")
    assert pg[5] == "" and pg[7] == "9.60×" and pg[8] == "" and pg[9] == ""
    # an endpoint only we serve is held to its p99 target
    assert _row(report, "v1-credits-first-page c=1")[10] == "p99 < 30 ms ✘"


def test_a_run_without_ours_still_compares_the_floor_with_the_peer(tmp_path):
    """`--targets peer,stack-floor`: the floor's rows, with floor ÷ peer, and no figure of ours."""
    files = {
        "stack-floor": _write(tmp_path, "stack-floor", [_group("refresh(rotate) c=8", 2.0)]),
        "peer": _write(tmp_path, "peer", [_group("refresh(rotate) c=8", 1.0), _group("discovery c=1", 0.2)]),
    }
    machine = {"cpu": "test", "cores": 2, "python": "3.11", "node": "v20", "load_before": [0.1], "load_after": [0.2]}
    report = render_report(
        files, machine, SimpleNamespace(profile="quick", scale=1, workers=2, threads=4, server="granian")
    )
    refresh = _row(report, "refresh(rotate) c=8")
    assert refresh[1:5] == ["", "", "", ""] and refresh[5:8] == ["2.000", "1.000", ""]
    assert refresh[8] == "2.00×" and refresh[10] == "≤ 1.0×"
    discovery = _row(report, "discovery c=1")
    assert discovery[5] == "" and discovery[6] == "0.200"


def test_the_database_backed_peers_lead_the_report_with_issue_20s_targets(tmp_path):
    """Ours on SQLite against the peer on Redis, ours on PostgreSQL against the peer on PostgreSQL,
    each held to its target; the in-memory peer beside them."""
    files = {
        "ours": _write(tmp_path, "ours", [_group("token(code+PKCE) c=1", 2.0), _group("userinfo c=1", 1.4)]),
        "ours-postgresql": _write(
            tmp_path,
            "ours-postgresql",
            [_group("token(code+PKCE) c=1 [PostgreSQL]", 3.0), _group("userinfo c=1 [PostgreSQL]", 1.2)],
        ),
        "peer-redis": _write(
            tmp_path, "peer-redis", [_group("token(code+PKCE) c=1", 2.5), _group("userinfo c=1", 1.0)]
        ),
        "peer-pg": _write(tmp_path, "peer-pg", [_group("token(code+PKCE) c=1", 2.5), _group("userinfo c=1", 1.0)]),
        "peer": _write(tmp_path, "peer", [_group("token(code+PKCE) c=1", 1.5)]),
    }
    machine = {"cpu": "test", "cores": 2, "python": "3.11", "node": "v20", "load_before": [0.1], "load_after": [0.2]}
    report = render_report(
        files, machine, SimpleNamespace(profile="quick", scale=1, workers=2, threads=4, server="granian")
    )
    head = report.index("ours on SQLite | peer on Redis")
    assert head < report.index("Against the in-memory peer")
    token = _row(report[head:], "token(code+PKCE) c=1")
    assert token[1:] == ["2.000", "2.500", "0.80×", "≤ 1.0× ✔", "3.000", "2.500", "1.20×", "≤ 1.0× ✘", "1.500"]
    userinfo = _row(report[head:], "userinfo c=1")
    assert userinfo[3:5] == ["1.40×", "≤ 1.3× ✘"] and userinfo[7:9] == ["1.20×", "≤ 1.3× ✔"] and userinfo[9] == ""


def test_what_postgresql_adds_is_split_from_the_ratio_without_a_database_server(tmp_path):
    """Each side's PostgreSQL figure against its own figure without a database server (ours on SQLite,
    the peer in memory), and ours on SQLite ÷ the in-memory peer; a test missing from a run is left out."""
    files = {
        "ours": _write(tmp_path, "ours", [_group("token(code+PKCE) c=1", 1.5), _group("userinfo c=1", 0.4)]),
        "ours-postgresql": _write(tmp_path, "ours-postgresql", [_group("token(code+PKCE) c=1 [PostgreSQL]", 2.5)]),
        "peer-pg": _write(tmp_path, "peer-pg", [_group("token(code+PKCE) c=1", 2.2), _group("userinfo c=1", 0.6)]),
        "peer-redis": _write(tmp_path, "peer-redis", [_group("token(code+PKCE) c=1", 2.0)]),
        "peer": _write(tmp_path, "peer", [_group("token(code+PKCE) c=1", 1.0), _group("userinfo c=1", 0.3)]),
    }
    machine = {"cpu": "test", "cores": 2, "python": "3.11", "node": "v20", "load_before": [0.1], "load_after": [0.2]}
    args = SimpleNamespace(profile="quick", scale=1, workers=2, threads=4, server="granian")
    report = render_report(files, machine, args)
    split = report[report.index("What PostgreSQL adds") :]
    assert _row(split, "token(code+PKCE) c=1")[1:] == ["1.000", "1.200", "1.50×"]
    assert "| userinfo c=1 |" not in split.split("Against the in-memory peer")[0]
    # without the in-memory peer there is nothing to split against
    del files["peer"]
    assert "What PostgreSQL adds" not in render_report(files, machine, args)


def _repeats(name: str, runs: list[float]) -> dict:
    group = _group(name, sorted(runs)[len(runs) // 2])
    group["server_cpu_ms_per_op"].update(min=min(runs), max=max(runs), runs=runs)
    return group


def test_the_paired_table_divides_each_repeat_by_the_peers_beside_it(tmp_path):
    """A machine whose speed drifts mid-session moves both figures of a pair: ours 2, 4, 6 against
    the peer's 2.5, 5, 4 is 0.8, 0.8 and 1.5 repeat by repeat (median 0.8), where the ratio of the
    two medians reads 4 ÷ 4."""
    files = {
        "ours-postgresql": _write(
            tmp_path, "ours-postgresql", [_repeats("refresh(rotate) c=1 [PostgreSQL]", [2.0, 4.0, 6.0])]
        ),
        "peer-pg": _write(tmp_path, "peer-pg", [_repeats("refresh(rotate) c=1", [2.5, 5.0, 4.0])]),
        "ours": _write(tmp_path, "ours", [_repeats("userinfo c=1", [1.0])]),  # one repeat: no pairs to read
        "peer-redis": _write(tmp_path, "peer-redis", [_repeats("userinfo c=1", [1.0])]),
    }
    machine = {"cpu": "test", "cores": 2, "python": "3.11", "node": "v20", "load_before": [0.1], "load_after": [0.2]}
    report = render_report(
        files, machine, SimpleNamespace(profile="quick", scale=1, workers=2, threads=4, server="granian")
    )
    table = report.split("repeat by repeat:")[1].split("\n\n")[1]  # the table after its caption
    header = next(line for line in table.splitlines() if line.startswith("| test |"))
    assert "ours on SQLite ÷ peer on Redis" in header and "ours on PostgreSQL ÷ peer on PostgreSQL" in header
    refresh = [
        cell.strip()
        for cell in next(line for line in table.splitlines() if line.startswith("| refresh(rotate) c=1 |"))
        .strip("|")
        .split("|")
    ]
    assert refresh == ["refresh(rotate) c=1", "", "0.80× (0.80–1.50)"]
    assert _row(report, "refresh(rotate) c=1")[7] == "1.00×"  # the ratio of medians, in the main table
    assert "| userinfo c=1 |" not in table  # a single repeat gives no pairs
