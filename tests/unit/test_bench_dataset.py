"""The benchmark's dataset (bench/dataset.py) builds what `make bench` measures against: the
bench app and member, filler rows, and a catalog in which the member owns the most credits."""

from __future__ import annotations

import sqlite3

from bench.dataset import BENCH_CLIENT_ID, BENCH_EMAIL, CHEAP_ARGON2, prepare


def test_prepared_dataset_links_the_member_to_the_most_credited_profile(tmp_path):
    path = tmp_path / "bench.sqlite3"
    facts = prepare(f"sqlite:///{path}", str(tmp_path / "keys"), scale=0, argon2=CHEAP_ARGON2, catalog_credits=600)
    assert facts["client_id"] == BENCH_CLIENT_ID and facts["username"] == BENCH_EMAIL
    assert facts["catalog_credits"] == 600
    with sqlite3.connect(path) as db:
        (profile_id,) = db.execute("SELECT profile_id FROM users WHERE email = ?", (BENCH_EMAIL,)).fetchone()
        per_profile = dict(db.execute("SELECT profile_id, count(*) FROM credits GROUP BY profile_id"))
        assert sum(per_profile.values()) == 600
    assert facts["member_credits"] == per_profile[profile_id] == max(per_profile.values())
    assert any((tmp_path / "keys").iterdir()), "no signing key written"
