"""The catalog at size (issue 47): search, type-ahead, collaborators and deep pages, timed through
the whole `/v1` request path (the key door, the meter, the reads) in-process, one client. Search
runs twice: over the bench's twenty keywords, and over what people type - every word of five
letters or more in the catalog's track titles, as it is and with one typo each (`catalog_words`).

    DATABASE_URL=postgresql+psycopg://credits_id@127.0.0.1:5432/<db> .venv/bin/python -m bench.catalog
    make bench BENCH_ARGS="--profile catalog"      (the same, via the benchmark's entry point)

The database is migrated; an empty catalog is generated first (`flask catalog generate`: the full
size on PostgreSQL, a tenth on SQLite; `--tracks` ... to choose), a developer and a scale key are
made. Each operation runs `--requests` times after a warm-up, cycling through its inputs; the
figures are wall-clock milliseconds per request as the application sees them (Flask's test client,
no HTTP server: what the catalog costs, not the server's parsing) - p50 and p99 - and this process's
CPU per request (the database server's own CPU is not in it). Requests are paced to stay under
the scale key's 100 a second (the pause is not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KEYWORDS = [
    "love", "night", "beyonce", "martin", "midnight", "summer love", "crazy in", "the velvet", "garcia",
    "midnigth", "beyonse", "lo", "a", "sweet home", "electric", "dreamer", "cafe", "senorita", "zoe", "remix",
]  # fmt: skip
PREFIXES = ["a", "be", "lov", "mid", "sum", "the v", "cra", "jo", "sigu", "dj"]
TYPO_SEED = 7


def catalog_words(titles: list[str]) -> list[str]:
    """What people type rather than a chosen few: every word of five letters or more in `titles`
    (folded, alphabetical), each as it is and with one typo - a letter changed, dropped or added,
    chosen by a seeded draw - interleaved."""
    import random

    from app.models.catalog import fold

    draw = random.Random(TYPO_SEED)  # noqa: S311 - a benchmark's repeatable draw, not a secret
    words = sorted({w for title in titles for w in fold(title).split() if len(w) >= 5})
    typed = []
    for word in words:
        j, letter = draw.randrange(len(word)), draw.choice("abcdefghijklmnopqrstuvwxyz")
        typo = draw.choice([word[:j] + letter + word[j + 1 :], word[:j] + word[j + 1 :], word[:j] + letter + word[j:]])
        typed += [word, typo]
    return typed


PACE = 0.0125  # seconds from one request's start to the next's, at least: 80 a second at most


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=300, help="timed requests per operation")
    ap.add_argument("--tracks", type=int)
    ap.add_argument("--profiles", type=int)
    ap.add_argument("--albums", type=int)
    ap.add_argument("--credits", type=int)
    ap.add_argument("--seed", type=int, default=47)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--profile", default="catalog", help=argparse.SUPPRESS)  # `python -m bench --profile catalog`
    a = ap.parse_args(argv)

    os.environ.setdefault("APP_ENV", "development")
    from flask_migrate import upgrade
    from sqlalchemy import select

    from app.core.extensions import db
    from app.factory import create_app
    from app.models import Credit, Profile, Track, TrackIsrc
    from app.models.api_key import KeyPlan
    from app.services.apikeys import create_key
    from app.services.billing.enterprise import MAX_PER_SECOND, set_key_limits, set_terms
    from app.services.billing.ledger import account_for
    from app.services.catalog_generate import generate, sizes
    from app.services.catalog_seed import catalog_is_empty
    from app.services.members import create_member

    app = create_app()
    with app.app_context():
        upgrade()
        dialect = db.engine.dialect.name
        if catalog_is_empty():
            wanted = sizes(a.tracks, a.profiles, a.albums, a.credits, tenth=dialect != "postgresql")
            started = time.monotonic()
            made = generate(seed=a.seed, **wanted)
            db.session.commit()
            print(f"generated {made.as_dict()} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        owner = create_member(
            f"catalog-bench-{secrets.token_hex(4)}@example.test", "Catalog Bench", secrets.token_urlsafe(16),
            role="developer", email_verified=True,
        )  # fmt: skip
        # Enterprise terms: no spend ceiling and no balance to run out, so no call meets a 402.
        set_terms(account_for(owner), True, False, None, "benchmark")
        key, secret = create_key(owner, "catalog bench", "secret", KeyPlan.SCALE.value, [], actor=owner)
        # Its own limits, far above the pace: a search counts ten requests against them.
        set_key_limits(key, MAX_PER_SECOND * 60, MAX_PER_SECOND)
        db.session.commit()
        busiest = db.session.execute(
            select(Profile.id, Profile.credit_count).order_by(Profile.credit_count.desc()).limit(1)
        ).one()
        deep = db.session.scalar(select(Credit.profile_id).where(Credit.profile_id == busiest.id).limit(1))
        isrcs = list(db.session.scalars(select(TrackIsrc.isrc).limit(50)))
        typed = catalog_words(list(db.session.scalars(select(Track.title).order_by(Track.id).limit(20_000))))
        profiles = list(db.session.scalars(select(Profile.id).limit(50)))
        counts = {
            "profiles": db.session.scalar(select(db.func.count()).select_from(Profile)),
            "credits": db.session.scalar(select(db.func.count()).select_from(Credit)),
        }

    # As wsgi.py serves it: the start-up heap out of the collector's walks, logging's per-record
    # look-ups off (without these the lookups' p99 is the collector's pauses, not the catalog's).
    from app.core.serving import settle_for_serving

    settle_for_serving()
    client = app.test_client()
    headers = {"x-api-key": secret}

    def get(path: str) -> Callable[[], object]:
        return lambda: client.get(path, headers=headers)

    operations: dict[str, list[Callable[[], object]]] = {
        "search (all three buckets)": [
            (lambda k=k: client.post("/v1/search", json={"keyword": k}, headers=headers)) for k in KEYWORDS
        ],
        "search, the catalog's words and a typo of each": [
            (lambda k=k: client.post("/v1/search", json={"keyword": k}, headers=headers)) for k in typed
        ],
        "autocomplete": [get(f"/v1/search/autocomplete?q={p}") for p in PREFIXES],
        "profile by id": [get(f"/v1/profile/{p}") for p in profiles],
        "track by ISRC": [get(f"/v1/track/isrc/{i}") for i in isrcs],
        "credits, page 1 (most-credited profile)": [get(f"/v1/profile/{deep}/credits?limit=50")],
        "credits at offset 10,000 (most-credited profile)": [get(f"/v1/profile/{deep}/credits?limit=50&offset=10000")],
        "collaborators (most-credited profile)": [get(f"/v1/profile/{deep}/collaborators?limit=20")],
    }
    results = {}
    for name, calls in operations.items():
        for call in calls[:5]:
            response = call()
            assert response.status_code == 200, (name, response.status_code, response.get_data(as_text=True))  # type: ignore[attr-defined]
        walls = []
        cpu_start = time.process_time()
        for n in range(a.requests):
            started = time.perf_counter()
            response = calls[n % len(calls)]()
            spent = time.perf_counter() - started
            walls.append(spent * 1000)
            time.sleep(max(0.0, PACE - spent))
            assert response.status_code == 200, (name, response.status_code)  # type: ignore[attr-defined]
        cpu = (time.process_time() - cpu_start) * 1000 / a.requests
        results[name] = {
            "p50_ms": round(statistics.median(walls), 2),
            "p99_ms": round(_percentile(walls, 0.99), 2),
            "cpu_ms": round(cpu, 2),
        }
    report = {
        "database": dialect,
        "catalog": counts,
        "most_credited_profile_credits": busiest.credit_count,
        "requests_per_operation": a.requests,
        "results": results,
    }
    print(f"| operation ({dialect}, {counts['credits']:,} credits) | p50 ms | p99 ms | app CPU ms |")
    print("|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['p50_ms']} | {r['p99_ms']} | {r['cpu_ms']} |")
    if a.out:
        Path(a.out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
