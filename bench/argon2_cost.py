"""What a password check costs: argon2id verification with the configured parameters
(ARGON2_TIME_COST / ARGON2_MEMORY_COST / ARGON2_PARALLELISM, defaults in app/core/config.py), beside the
OWASP Password Storage Cheat Sheet's equivalent argon2id settings and argon2-cffi's defaults.

    python -m bench.argon2_cost [--n 30]

Each row: median wall and CPU milliseconds of one `verify` (what a login costs the server), and
of one `hash` (what setting a password, or a rehash after a parameter change, costs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from argon2 import PasswordHasher

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.core.config import load_settings  # noqa: E402

# (label, time_cost, memory KiB, parallelism)
CANDIDATES = [
    ("OWASP: m=47104 (46 MiB), t=1, p=1", 1, 47104, 1),
    ("OWASP: m=19456 (19 MiB), t=2, p=1", 2, 19456, 1),
    ("OWASP: m=12288 (12 MiB), t=3, p=1", 3, 12288, 1),
    ("OWASP: m=9216 (9 MiB), t=4, p=1", 4, 9216, 1),
    ("OWASP: m=7168 (7 MiB), t=5, p=1", 5, 7168, 1),
    ("argon2-cffi default: m=65536 (64 MiB), t=3, p=4", 3, 65536, 4),
]


def measure(t: int, m: int, p: int, n: int) -> dict:
    hasher = PasswordHasher(time_cost=t, memory_cost=m, parallelism=p)
    password = "correct horse battery staple"
    stored = hasher.hash(password)
    hasher.verify(stored, password)  # warm up
    walls, cpus, hash_walls = [], [], []
    for _ in range(n):
        w0, c0 = time.perf_counter(), time.process_time()
        hasher.verify(stored, password)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    for _ in range(max(3, n // 5)):
        w0 = time.perf_counter()
        hasher.hash(password)
        hash_walls.append(time.perf_counter() - w0)
    ms = lambda xs: round(statistics.median(xs) * 1000, 1)  # noqa: E731
    return {
        "verify_wall_ms": ms(walls),
        "verify_cpu_ms": ms(cpus),
        "verify_min_ms": round(min(walls) * 1000, 1),
        "hash_wall_ms": ms(hash_walls),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30, help="verifications per row")
    a = ap.parse_args(argv)
    s = load_settings()
    rows = [
        (
            f"configured: m={s['ARGON2_MEMORY_COST']}, t={s['ARGON2_TIME_COST']}, p={s['ARGON2_PARALLELISM']}",
            int(s["ARGON2_TIME_COST"]),
            int(s["ARGON2_MEMORY_COST"]),
            int(s["ARGON2_PARALLELISM"]),
        ),
        *CANDIDATES,
    ]
    print("| argon2id parameters | verify ms (median wall) | verify ms (fastest) | verify CPU ms | hash ms |")
    print("|---|---:|---:|---:|---:|")
    for label, t, m, p in rows:
        r = measure(t, m, p, a.n)
        print(
            f"| {label} | {r['verify_wall_ms']} | {r['verify_min_ms']} | {r['verify_cpu_ms']} | {r['hash_wall_ms']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
