"""bench/profile.py's `--by-request` breakdown names each HTTP request of a sign-in once per
operation, and every one of them succeeds (the driver stops otherwise). The figures themselves are
not asserted: speed is for benchmarks, not tests."""

from __future__ import annotations

import re

from bench import profile

SIGN_IN = [
    "GET /api/auth/oauth2/authorize",
    "GET /login",
    "POST /login",
    "GET /consent",
    "POST /consent",
]


def test_a_sign_in_is_broken_down_request_by_request(capsys):
    profile.main(["--op", "roundtrip", "--n", "3", "--no-tree", "--by-request"])
    out = capsys.readouterr().out
    per_request = {kind: float(share) for share, kind in re.findall(r"ms CPU/request, ([\d.]+)/op +([A-Z]+ \S+)", out)}
    assert per_request == dict.fromkeys(SIGN_IN, 1.0), out
    assert re.search(r"ms CPU/op in the app", out), out


def test_without_the_option_there_is_no_breakdown(capsys):
    profile.main(["--op", "discovery", "--n", "3", "--no-tree"])
    out = capsys.readouterr().out
    assert "discovery  n=3" in out and "CPU/request" not in out, out
