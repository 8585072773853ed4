"""bench/layers.py, the per-layer cost table of docs/performance.md, still runs end to end: every
row is measured, and the whole requests it times answer 200 (it stops otherwise). The figures
themselves are not asserted: speed is for benchmarks, not tests."""

from __future__ import annotations

import re

from bench import layers

ROWS = [
    "RS256 signature",
    "ID token",
    "SHA-256",
    "sqlite3 driver",
    "SQLAlchemy Core",
    "SQLAlchemy Session",
    "the token with its app and member",
    "find_bearer",
    "the app by its client_id",
    'Flask "hello"',
    "/healthz",
    "discovery",
    "userinfo",
    "code + PKCE exchange",
]


def test_every_layer_is_measured(capsys):
    layers.main(["--number", "20", "--repeat", "1", "--scale", "0"])
    table = capsys.readouterr().out
    for label in ROWS:
        line = next((row for row in table.splitlines() if label in row), None)
        assert line is not None, f"no row for {label!r}"
        figure = float(re.search(r"\| ([\d,.]+) \|$", line).group(1).replace(",", ""))
        assert figure > 0, line
