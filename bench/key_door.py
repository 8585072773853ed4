"""The key door's cost: the server CPU of a catalog call through the gateway (key lookup, the
plan's budgets, the meter) beside the same handler behind a bearer token; and the throughput one
`scale` key gets at 8 clients.

    python -m bench.key_door                          # 5 s per door, 3 rounds, then 10 s at 8 clients
    python -m bench.key_door --duration 3 --rounds 5 --throughput 20

PostgreSQL and Redis are private (bench/stores.py: a cluster made with initdb, a redis-server)
and run inside the server's process tree, so the CPU they spend for the server is counted: a
Redis round trip saved shows in the figure. `python serve.py` serves with WEB_CONCURRENCY workers
(2, as production on two cores), one thread each, no tool server. The demo catalog
(`seed_accounts`) is the data; the demo `pro` member's own profile is the handler both doors
reach: `GET /v1/profile/{id}` with the member's access token (`credits:read`), and with an API
key; `GET /v1/roles` (key only) is measured too. One client at a time over a keep-alive
connection (the shared harness's lean client), doors interleaved round by round; keys rotate over
KEYS `scale` keys so no budget refuses the measured calls.

Then the throughput: CLIENTS clients on `/v1/roles` with one `scale` key (100 a second), for
--throughput seconds: admitted (2xx) a second, 429s, and any other status (the target: >= 100
admitted a second, no 5xx).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import timedelta
from itertools import cycle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.dataset import BENCH_LIMITS  # noqa: E402
from bench.run import load_harness  # noqa: E402
from bench.servers import free_port  # noqa: E402
from bench.stores import Store, private_postgres, private_redis, start_with_store, stop_group  # noqa: E402

DEFAULT_HARNESS = Path(os.environ.get("BENCH_HARNESS") or ROOT.parent / "shared" / "bench")
KEYS = 24
CLIENTS = 8
TARGET = 1.3  # the key door's CPU at most 1.3 times the bearer door's on the same handler


def prepare(out: Path) -> None:
    """In the server's tree, before it starts (DATABASE_URL from the environment): the schema, the
    demo accounts and catalog, KEYS + 1 scale keys (enterprise terms: no call meets a 402) and an
    access token of the demo `pro` member; written to `out`."""
    from flask_migrate import upgrade

    from app import create_app
    from app.core.extensions import db
    from app.models import Client, Token, User
    from app.models.base import new_secret, new_uuid, sha256_hex, utcnow
    from app.services.apikeys import create_key
    from app.services.billing.enterprise import set_terms
    from app.services.billing.ledger import account_for
    from app.services.demo import DEMO_DEVELOPER, seed_accounts

    app = create_app()
    with app.app_context():
        upgrade()
        seed_accounts()
        developer = db.session.scalar(db.select(User).where(User.email == DEMO_DEVELOPER["email"]))
        set_terms(account_for(developer), True, False, None, "benchmark")
        keys = [create_key(developer, f"bench {n}", "secret", "scale")[1] for n in range(KEYS + 1)]
        member = db.session.scalar(db.select(User).where(User.tier == "pro", User.profile_id.is_not(None)))
        client = db.session.scalar(db.select(Client).where(Client.client_id == "demo-web-app"))
        token, now = new_secret(32), utcnow()
        db.session.add(
            Token(
                client_id=client.id,
                user_id=member.id,
                grant_id=new_uuid(),
                scope="openid credits:read",
                access_token_hash=sha256_hex(token),
                issued_at=now,
                access_expires_at=now + timedelta(days=1),
                auth_time=now,
            )
        )
        db.session.commit()
        out.write_text(
            json.dumps({"keys": keys[:KEYS], "scale": keys[KEYS], "token": token, "profile": member.profile_id})
        )


def start(tmp: Path, workers: int) -> tuple[Any, str, dict]:
    """The private stores, the prepared data and `python serve.py`, one process tree; its root,
    the server's URL and the prepared values."""
    postgres = private_postgres(free_port(), tmp / "pg", "keydoor")
    redis = private_redis(free_port(), tmp / "redis")
    both = Store("both", postgres.url, postgres.start + redis.start)
    port, prepared = free_port(), tmp / "prepared.json"
    env = {
        **os.environ,
        "APP_ENV": "development",
        "DATABASE_URL": postgres.url.replace("postgresql://", "postgresql+psycopg://", 1),
        "REDIS_URL": redis.url,
        "KEYS_DIR": str(tmp / "keys"),
        "SMTP_URL": "",
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        "WEB_THREADS": "1",
        "MCP_BIND": "off",
        "LOG_LEVEL": "WARNING",
        # The bearer door's own budget (per sign-in and app) lifted for its one measured token, as
        # `make bench` does (BENCH_LIMITS): still counted, never refused.
        "API_RATE_LIMIT_PER_MINUTE": str(BENCH_LIMITS["API_RATE_LIMIT_PER_MINUTE"]),
    }
    then = f"{shlex.quote(sys.executable)} -m bench.key_door --prepare {shlex.quote(str(prepared))}"
    proc = start_with_store(both, then, [sys.executable, "serve.py"], env, ROOT, tmp / "server.log")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_group(proc)
            raise SystemExit(f"bench.key_door: the server did not start; see {tmp / 'server.log'}")
        try:
            urllib.request.urlopen(url + "/healthz", timeout=5)  # noqa: S310 - our own server on loopback
            break
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    return proc, url, json.loads(prepared.read_text())


def doors(url: str, values: dict) -> dict[str, Callable[..., Awaitable[bool]]]:
    keys = cycle(values["keys"])
    profile = f"{url}/v1/profile/{values['profile']}"
    bearer = {"Authorization": f"Bearer {values['token']}"}

    def call(target: str, headers: Callable[[], dict[str, str]]) -> Callable[..., Awaitable[bool]]:
        async def work(conn: Any, _jar: Any) -> bool:
            response = await conn.request("GET", target, headers=headers())
            if response.status != 200:
                raise RuntimeError(f"{target}: {response.status} {response.text[:200]}")
            return True

        return work

    return {
        "profile, bearer token": call(profile, lambda: bearer),
        "profile, API key": call(profile, lambda: {"x-api-key": next(keys)}),
        "roles, API key": call(f"{url}/v1/roles", lambda: {"x-api-key": next(keys)}),
    }


def measure(harness: Any, work: Callable, url: str, duration: float, pid: int, clients: int = 1) -> dict:
    parts = url.split("//", 1)[1].split(":")
    cfg = SimpleNamespace(hostport=(parts[0], int(parts[1])))
    asyncio.run(harness.run_loops(cfg, clients, work, duration=1.0, name="warm-up"))
    cpu0 = harness.proc_tree_cpu(pid)
    result, _ = asyncio.run(harness.run_loops(cfg, clients, work, duration=duration, name="door"))
    cpu = harness.proc_tree_cpu(pid) - cpu0
    if result["errors"] or not result["ok"]:
        raise SystemExit(f"bench.key_door: {result['errors']} errors")
    return {"rps": result["rps"], "cpu_ms": cpu * 1000 / result["ok"], "p50_ms": result["p50_ms"], "ok": result["ok"]}


def throughput(harness: Any, url: str, value: str, duration: float, pid: int) -> dict:
    """CLIENTS clients on /v1/roles with one scale key: what each answer was, per second."""
    statuses: Counter[int] = Counter()

    async def work(conn: Any, _jar: Any) -> bool:
        response = await conn.request("GET", f"{url}/v1/roles", headers={"x-api-key": value})
        statuses[response.status] += 1
        return True

    parts = url.split("//", 1)[1].split(":")
    cfg = SimpleNamespace(hostport=(parts[0], int(parts[1])))
    cpu0 = harness.proc_tree_cpu(pid)
    result, _ = asyncio.run(harness.run_loops(cfg, CLIENTS, work, duration=duration, name="throughput"))
    cpu = harness.proc_tree_cpu(pid) - cpu0
    elapsed = result["seconds"]
    admitted = sum(n for status, n in statuses.items() if 200 <= status < 300)
    return {
        "seconds": round(elapsed, 1),
        "admitted_per_s": admitted / elapsed,
        "answered_per_s": result["rps"],
        "statuses": dict(statuses),
        "errors": result["errors"],
        "5xx": sum(n for status, n in statuses.items() if status >= 500),
        "cpu_ms_per_answer": cpu * 1000 / max(1, result["ok"]),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per door and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--throughput", type=float, default=10.0, help="seconds at 8 clients on one scale key (0: skip)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--harness", default=str(DEFAULT_HARNESS), help="folder of the shared harness")
    ap.add_argument("--json", default="", help="also write the figures here")
    ap.add_argument("--prepare", default="", help=argparse.SUPPRESS)  # the step run inside the server's tree
    a = ap.parse_args(argv)
    if a.prepare:
        prepare(Path(a.prepare))
        return

    harness = load_harness(Path(a.harness))
    tmp = Path(tempfile.mkdtemp(prefix="credits-bench-keydoor-"))
    proc = None
    try:
        proc, url, values = start(tmp, a.workers)
        runs: dict[str, list[dict]] = {}
        for round_no in range(a.rounds):
            for name, work in doors(url, values).items():
                runs.setdefault(name, []).append(measure(harness, work, url, a.duration, proc.pid))
            print(f"round {round_no + 1} of {a.rounds} done", file=sys.stderr)
        flow = throughput(harness, url, values["scale"], a.throughput, proc.pid) if a.throughput else None
    finally:
        if proc is not None:
            stop_group(proc)
        shutil.rmtree(tmp, ignore_errors=True)
    report(runs, flow, a)


def report(runs: dict[str, list[dict]], flow: dict | None, a: argparse.Namespace) -> None:
    figures: dict[str, Any] = {"doors": {}, "throughput": flow}
    lines = [
        f"Server CPU per call, PostgreSQL and Redis included (median of {a.rounds} runs of {a.duration:g} s, one client):",
        "",
        "| call | ms/call | req/s |",
        "|---|---|---|",
    ]
    for name, results in runs.items():
        cpu = statistics.median(r["cpu_ms"] for r in results)
        rps = statistics.median(r["rps"] for r in results)
        figures["doors"][name] = {"cpu_ms": cpu, "rps": rps, "runs": [r["cpu_ms"] for r in results]}
        lines.append(f"| {name} | {cpu:.3f} | {rps:.0f} |")
    bearer = figures["doors"]["profile, bearer token"]["cpu_ms"]
    key = figures["doors"]["profile, API key"]["cpu_ms"]
    figures["ratio"] = key / bearer
    mark = "" if key / bearer <= TARGET else f" (target {TARGET}x)"
    lines += ["", f"key door / bearer door on the same handler: {key / bearer:.2f}x{mark}"]
    if flow is not None:
        lines.append(
            f"{CLIENTS} clients on one scale key for {flow['seconds']} s: {flow['admitted_per_s']:.0f} admitted/s "
            f"({flow['answered_per_s']:.0f} answered/s), statuses {flow['statuses']}, 5xx {flow['5xx']}, "
            f"errors {flow['errors']}, {flow['cpu_ms_per_answer']:.2f} ms CPU per answer"
        )
    print("\n".join(lines))
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
