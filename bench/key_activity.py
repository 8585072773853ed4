"""What keeping each key's recent requests costs the key door: server CPU per request with it on
(KEY_ACTIVITY_KEEP=100, written in batches every KEY_ACTIVITY_FLUSH_SECONDS) and off (0), the same
requests against two servers on the same database, interleaved round by round.

    python -m bench.key_activity                                  # SQLite, 5 s per run, 3 rounds
    python -m bench.key_activity --duration 3 --rounds 5 --database-url postgresql+psycopg://user@127.0.0.1:5432/db

Both servers are `python serve.py` (granian, one worker of one thread, as production runs it; no
tool server), so the CPU counted is the whole process tree's: the requests and the writer thread's
batches. Two operations: `GET /v1/roles` with a live `scale` key (an answered call: an entry named by
the key), and the same with a revoked key (a 401: an entry kept as the value's hash, whose key the
batch finds). Requests rotate over several keys, so no key's limit refuses any; the per-address
budget a refused key draws on is lifted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from itertools import cycle
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.run import load_harness  # noqa: E402
from bench.servers import free_port, stop, wait_for  # noqa: E402
from bench.tools import DEFAULT_HARNESS, KEYS, prepare  # noqa: E402

MODES = {"on": "100", "off": "0"}


def revoked_keys(settings: dict[str, str], count: int) -> list[str]:
    """`count` revoked keys of the demo developer (their values)."""
    from app import create_app
    from app.core.extensions import db
    from app.models import User
    from app.services.apikeys import create_key, revoke_key
    from app.services.demo import DEMO_DEVELOPER

    app = create_app(settings)
    with app.app_context():
        developer = db.session.scalar(db.select(User).where(User.email == DEMO_DEVELOPER["email"]))
        values = []
        for n in range(count):
            key, value = create_key(developer, f"bench revoked {n}", "secret", "scale")
            revoke_key(key)
            values.append(value)
        db.session.commit()
        return values


def start(settings: dict[str, str], keep: str, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {
        **os.environ,
        **settings,
        "KEY_ACTIVITY_KEEP": keep,
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "MCP_BIND": "off",
        "LOG_LEVEL": "WARNING",
    }
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "serve.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_for(url + "/healthz", proc, log_path)  # stops the server and raises if it does not come up
    return proc, url


def work(url: str, keys: list[str], status: int) -> Callable[..., Awaitable[bool]]:
    turn = cycle(keys)

    async def request(conn: Any, jar: Any) -> bool:
        response = await conn.request("GET", url + "/v1/roles", headers={"x-api-key": next(turn)})
        if response.status != status:
            raise RuntimeError(f"/v1/roles: {response.status} {response.text[:200]}")
        return True

    return request


def measure(harness: Any, url: str, pid: int, job: Callable, duration: float) -> dict[str, float]:
    parts = urlsplit(url)
    cfg = SimpleNamespace(hostport=(parts.hostname, parts.port))
    asyncio.run(harness.run_loops(cfg, 1, job, duration=1.0, name="warm-up"))
    time.sleep(1.2)  # the warm-up's batch is written before the count starts
    before = harness.proc_tree_cpu(pid)
    result, _ = asyncio.run(harness.run_loops(cfg, 1, job, duration=duration, name="run"))
    time.sleep(1.2)  # ...and the run's own last batch inside it
    cpu = harness.proc_tree_cpu(pid) - before
    if result["errors"] or not result["ok"]:
        raise SystemExit(f"bench.key_activity: {result['errors']} errors")
    return {"cpu_ms": cpu * 1000 / result["ok"], "rps": result["rps"], "ok": result["ok"]}


def in_process(settings: dict[str, str], calls: int = 20_000, batch: int = 1_000) -> None:
    """The two halves on their own, in this process (CPU time, so less at the mercy of a shared
    machine): the hook a request runs (an entry appended) and the batch write per entry (SQLite's
    work is in this process; PostgreSQL's server side is not counted here)."""
    import threading

    from flask import Response, g

    from app import create_app
    from app.core.extensions import db
    from app.models import ApiKey
    from app.web import key_activity as edge

    app = create_app({**settings, "KEY_ACTIVITY_FLUSH_SECONDS": "1"})
    with app.app_context():
        keys = [(k.id, k.prefix) for k in db.session.scalars(db.select(ApiKey).limit(KEYS))]
    recorder = edge.Recorder(app)
    recorder.thread = threading.current_thread()  # no writer thread: this measures the halves apart
    app.extensions[edge.EXTENSION] = recorder
    response = Response("{}", status=200, mimetype="application/json")
    with app.test_request_context("/v1/roles", headers={"x-api-key": "msk_" + "x" * 43}):
        g.request_id = "0" * 32
        g.log_key = {"key_id": keys[0][0], "key_prefix": keys[0][1]}
        started = time.process_time()
        for _ in range(calls):
            edge._after_api_request(response)
        hook_us = (time.process_time() - started) * 1e6 / calls
    recorder.pending.clear()
    per_entry = []
    for round_no in range(5):
        with app.test_request_context("/v1/roles", headers={"x-api-key": "msk_" + "x" * 43}):
            for n in range(batch):
                g.request_id = f"{round_no}-{n}"
                g.log_key = {"key_id": keys[n % len(keys)][0], "key_prefix": ""}
                edge._after_api_request(response)
        started = time.process_time()
        recorder.flush()
        per_entry.append((time.process_time() - started) * 1e6 / batch)
    print(
        f"In process: the hook {hook_us:.1f} us of CPU per request; a batch of {batch} entries over "
        f"{len(keys)} keys {statistics.median(per_entry):.1f} us per entry (median of 5, this process only)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    ap.add_argument("--harness", default=str(DEFAULT_HARNESS), help="folder of the shared harness")
    a = ap.parse_args(argv)

    harness = load_harness(Path(a.harness))
    tmp = Path(tempfile.mkdtemp(prefix="credits-bench-key-activity-"))
    settings = {
        "APP_ENV": "development",
        "DATABASE_URL": a.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}",
        "KEYS_DIR": str(tmp / "keys"),
        "SMTP_URL": "",
        "API_RATE_LIMIT_PER_MINUTE": "100000000",  # the address budget a refused key draws on
    }
    servers: dict[str, tuple[subprocess.Popen, str]] = {}
    try:
        live, _ids = prepare(settings)
        revoked = revoked_keys(settings, KEYS)
        in_process(settings)
        for mode, keep in MODES.items():
            servers[mode] = start(settings, keep, tmp / f"server-{mode}.log")
        operations = {"answered (200)": (live, 200), "revoked key (401)": (revoked, 401)}
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        for round_no in range(a.rounds):
            for op, (keys, status) in operations.items():
                for mode, (proc, url) in servers.items():
                    runs.setdefault((op, mode), []).append(
                        measure(harness, url, proc.pid, work(url, keys, status), a.duration)
                    )
            print(f"round {round_no + 1} of {a.rounds} done", file=sys.stderr)
        print(f"Server CPU per GET /v1/roles (median of {a.rounds} runs of {a.duration:g} s, one client):\n")
        print("| request | recent requests off, ms | on, ms | added, ms | on / off | req/s on |")
        print("|---|---|---|---|---|---|")
        for op in operations:
            off = statistics.median(r["cpu_ms"] for r in runs[(op, "off")])
            on = statistics.median(r["cpu_ms"] for r in runs[(op, "on")])
            rps = statistics.median(r["rps"] for r in runs[(op, "on")])
            print(f"| {op} | {off:.3f} | {on:.3f} | {on - off:+.3f} | {on / off:.2f}x | {rps:.0f} |")
        spreads = {f"{op}, {mode}": [round(r["cpu_ms"], 3) for r in rs] for (op, mode), rs in runs.items()}
        print(f"\nEach run's ms per request: {spreads}")
    finally:
        for proc, _url in servers.values():
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
