"""What each provider sends to PostgreSQL for one operation: its round trips, by kind of statement,
and the time the database spends executing them; ours beside node oidc-provider's PostgreSQL adapter.

    python -m bench.statements                      # 50 of each: roundtrip, token, refresh, userinfo
    python -m bench.statements --n 200 --op roundtrip,token

Both work on one private PostgreSQL cluster (`bench/stores.py`) with pg_stat_statements loaded, each
in a database of its own: the peer (shared/bench/peer-persistent, `PEER_ADAPTER=pg`) over HTTP,
driven by the shared harness's own client; ours in this process, through Flask's test client
(`bench/profile.py`: the statements a request sends do not depend on the HTTP server). The
statistics are reset before each batch of operations and read after it, for that database only;
what a batch needs first (codes to exchange, tokens to refresh) is made before the reset.

Every statement is a round trip for both sides: neither pipelines, psycopg sends a transaction's
BEGIN on its own, and the peer's adapter runs each statement in autocommit, so each of its writes
is also a commit. CPU is not measured here (pg_stat_statements costs some of its own): `make bench`
measures it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.run import DEFAULT_HARNESS, harness_config, load_harness, peer_target, start_persistent_peer  # noqa: E402
from bench.servers import free_port  # noqa: E402
from bench.stores import private_postgres, stop_group  # noqa: E402

OPS = ("roundtrip", "token", "refresh", "userinfo")
KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT", "ROLLBACK")
WARM_UP = 3  # operations before each batch: the pools' connections opened, their statements prepared
STATS = """SELECT s.query, s.calls, s.total_exec_time, s.wal_bytes FROM pg_stat_statements s
           JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s"""


def kind_of(query: str) -> str:
    """The statement's kind by its first word (`WITH ...` and anything else: "other")."""
    word = query.lstrip().split(None, 1)[0].upper() if query.strip() else ""
    return word if word in KINDS else "other"


@dataclass(frozen=True)
class PerOperation:
    """What one operation sent to the database, on average over a batch."""

    round_trips: float
    by_kind: dict[str, float]
    executor_ms: float
    wal_bytes: float


def per_operation(rows: list[tuple[str, int, float, float]], n: int) -> PerOperation:
    """pg_stat_statements' rows for one database after `n` operations: calls per operation by kind,
    the executor's milliseconds and the bytes written to the write-ahead log per operation (what
    the WAL writer and the checkpointer then work through, on the server's CPU)."""
    calls: Counter[str] = Counter()
    executor = wal = 0.0
    for query, count, exec_ms, wal_bytes in rows:
        calls[kind_of(query)] += count
        executor += exec_ms
        wal += float(wal_bytes)
    by_kind = {k: calls[k] / n for k in (*KINDS, "other")}
    return PerOperation(sum(calls.values()) / n, by_kind, executor / n, wal / n)


class Statistics:
    """pg_stat_statements on the private cluster, reset and read per database."""

    def __init__(self, admin_url: str):
        self.conn = psycopg.connect(admin_url, autocommit=True)
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def reset(self) -> None:
        self.conn.execute("SELECT pg_stat_statements_reset()")

    def read(self, database: str, n: int) -> PerOperation:
        return per_operation(self.conn.execute(STATS, (database,)).fetchall(), n)


# -- the two sides ------------------------------------------------------------------------------


class Ours:
    """Credits ID in this process on `url`, its dataset prepared there (bench/profile.py)."""

    def __init__(self, url: str):
        from bench.profile import Driver, build

        self.app, data = build(1, url)
        self.driver = Driver(self.app, data)

    def batch(self, op: str, n: int, stats: Statistics) -> PerOperation:
        from bench.profile import operation

        operation(self.driver, op, WARM_UP)()
        work = operation(self.driver, op, n)  # prepares what the batch needs
        stats.reset()
        work()
        return stats.read("credits", n)

    def close(self) -> None:
        """Hand the pooled connections back to the database, so that it can stop."""
        from app.core.extensions import db

        with self.app.app_context():
            db.engine.dispose()


class Peer:
    """node oidc-provider on its PostgreSQL adapter, over HTTP with the shared harness's client."""

    def __init__(self, harness: Path, issuer: str):
        self.op = load_harness(harness)
        self.cfg = harness_config(self.op, peer_target("peer-pg", issuer, 0))
        self.host, self.port = self.cfg.hostport

    def batch(self, op: str, n: int, stats: Statistics) -> PerOperation:
        return asyncio.run(self._batch(op, n, stats))

    async def _batch(self, op: str, n: int, stats: Statistics) -> PerOperation:
        h = self.op
        await h.fetch_discovery(self.cfg)
        conn, jar = h.Conn(self.host, self.port), h.CookieJar()
        try:
            if op == "roundtrip":
                await _after_warm_up(n, stats, lambda _: h.roundtrip(self.cfg, conn, jar))
            elif op == "token":
                codes = [(await h.roundtrip(self.cfg, conn, jar))[:2] for _ in range(WARM_UP + n)]
                await _after_warm_up(n, stats, lambda i: h.exchange(self.cfg, conn, *codes[i]))
            else:
                state = {"tokens": await h.exchange(self.cfg, conn, *(await h.roundtrip(self.cfg, conn, jar))[:2])}

                async def step(_: int) -> None:
                    state["tokens"] = await self._refresh_or_userinfo(op, conn, state["tokens"])

                await _after_warm_up(n, stats, step)
        finally:
            await conn.close()
        return stats.read("perf_peer", n)

    async def _refresh_or_userinfo(self, op: str, conn: Any, tokens: dict) -> dict:
        if op == "refresh":
            headers, body = self.op.token_request(
                self.cfg, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
            )
            r = await conn.request("POST", self.cfg.disc["token_endpoint"], headers, body)
        else:  # userinfo (main refuses any other operation)
            bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
            r = await conn.request("GET", self.cfg.disc["userinfo_endpoint"], bearer)
        if r.status != 200:
            raise SystemExit(f"bench.statements: the peer's {op} answered {r.status}: {r.text[:200]}")
        return r.json() if op == "refresh" else tokens


async def _after_warm_up(n: int, stats: Statistics, step: Callable[[int], Awaitable[Any]]) -> None:
    """`step(0)` to `step(WARM_UP + n - 1)`, the statistics reset once the warm-up's steps are done."""
    for i in range(WARM_UP + n):
        if i == WARM_UP:
            stats.reset()
        await step(i)


# -- the report ---------------------------------------------------------------------------------


def render(results: dict[str, dict[str, PerOperation]], n: int) -> str:
    """One markdown row per operation and provider."""
    lines = [
        f"Per operation, mean of {n} (pg_stat_statements):",
        "",
        "| operation | provider | round trips | SELECT | INSERT | UPDATE | DELETE | BEGIN | COMMIT | other |"
        " executor ms | WAL bytes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for op, sides in results.items():
        for side, p in sides.items():
            k = p.by_kind
            counts = " | ".join(
                f"{v:.1f}"
                for v in (
                    k["SELECT"],
                    k["INSERT"],
                    k["UPDATE"],
                    k["DELETE"],
                    k["BEGIN"],
                    k["COMMIT"] + k["ROLLBACK"],
                    k["other"],
                )
            )
            lines.append(
                f"| {op} | {side} | {p.round_trips:.1f} | {counts} | {p.executor_ms:.3f} | {p.wal_bytes:,.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default=",".join(OPS), help=f"some of {', '.join(OPS)}")
    ap.add_argument("--n", type=int, default=50, help="operations per batch")
    ap.add_argument("--harness", default=str(DEFAULT_HARNESS), help="folder of the shared harness")
    ap.add_argument("--peer-work", default=str(Path(tempfile.gettempdir()) / "credits-bench-peer-persistent"))
    a = ap.parse_args(argv)
    ops = [op for op in a.op.split(",") if op]
    if unknown := set(ops) - set(OPS):
        raise SystemExit(f"bench.statements: unknown operation(s) {', '.join(sorted(unknown))}")
    logging.disable(logging.INFO)  # the access lines of ours, in this process
    tmp = Path(tempfile.mkdtemp(prefix="credits-statements-"))
    port = free_port()
    store = private_postgres(port, tmp / "store", "perf_peer", {"shared_preload_libraries": "pg_stat_statements"})
    proc: subprocess.Popen | None = None
    ours: Ours | None = None
    try:
        proc, issuer = start_persistent_peer(Path(a.harness), Path(a.peer_work), "pg", store, tmp / "peer.log")
        admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE credits")
        stats = Statistics(admin)
        ours = Ours(f"postgresql+psycopg://postgres@127.0.0.1:{port}/credits")
        sides: dict[str, Ours | Peer] = {"Credits ID": ours, "node oidc-provider": Peer(Path(a.harness), issuer)}
        results = {op: {name: side.batch(op, a.n, stats) for name, side in sides.items()} for op in ops}
        stats.conn.close()
        print(render(results, a.n))
    finally:
        if ours is not None:
            ours.close()
        if proc is not None:
            stop_group(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
