"""Housekeeping at size: `flask purge-expired`'s work on a database a year of service has filled,
batch by batch. Each batch is one transaction, so its duration is the longest any row lock it
takes is held: the figure that says whether requests served meanwhile wait.

    python -m bench.dataset --database-url URL --keys-dir DIR --scale 1000   # a year: 10 M tokens
    python -m bench.purge --database-url URL [--batch-size 1000] [--dry-run]

Prints the rows each table had and lost, the batches, the purge's wall time and the batches'
p50 / p99 / longest milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
    a = ap.parse_args(argv)

    from app import create_app
    from app.core.extensions import db
    from app.services.housekeeping import TABLES, count_expired, purge_table
    from bench.dataset import server_settings

    app = create_app(server_settings(a.database_url, tempfile.mkdtemp(prefix="purge-keys-")))
    with app.app_context():
        expired = count_expired()
        print("| table | expired | deleted | batches | wall s | batch p50 ms | batch p99 ms | longest batch ms |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        if a.dry_run:
            for table in TABLES:
                print(f"| {table} | {expired[table]:,} | | | | | | |")
            return 0
        for table in TABLES:
            batches: list[float] = []
            began = time.perf_counter()
            mark = [began]

            def end_batch(batches: list[float] = batches, mark: list[float] = mark) -> None:
                db.session.commit()
                now = time.perf_counter()
                batches.append((now - mark[0]) * 1000)
                mark[0] = now

            deleted = purge_table(table, app_now(), a.batch_size, end_batch)
            wall = time.perf_counter() - began
            cuts = statistics.quantiles(batches, n=100) if len(batches) > 1 else batches * 99
            print(
                f"| {table} | {expired[table]:,} | {deleted:,} | {len(batches):,} | {wall:,.1f} | "
                f"{statistics.median(batches):.1f} | {cuts[98]:.1f} | {max(batches):.1f} |"
            )
    return 0


def app_now():
    from app.models.base import utcnow

    return utcnow()


if __name__ == "__main__":
    sys.exit(main())
