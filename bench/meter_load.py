"""The meter under load: one `scale` key at its 100 requests a second, served by four granian
workers on PostgreSQL, one worker killed (SIGKILL) mid-run; then the meter's total beside what the
clients were answered.

    python -m bench.meter_load                       # 60 s at 100 requests a second, 4 workers
    python -m bench.meter_load --duration 10         # a shorter run
    python -m bench.meter_load --no-kill --json out.json

Everything runs on stores of its own, so nothing else on the machine adds to them: a private
PostgreSQL cluster (initdb in a temporary folder, bench/stores.py) started with `log_lock_waits`
on and `deadlock_timeout` at 1 ms, so any lock wait of a millisecond or more is logged with its
statement, and a private Redis for the key's budget (shared by the workers, as in production).
`python serve.py` runs the provider with WEB_CONCURRENCY workers, one thread each.

The clients (CLIENTS threads, one keep-alive connection each) send `GET /v1/roles` on a fixed
schedule, RATE a second (open loop: a slow answer does not slow the schedule), and sort every
answer: 2xx (admitted: the gateway let it through and the API answered), 429 (the key's budget
refused it; never metered), any other status, and no answer (the connection dropped: the killed
worker's request in flight). Meanwhile a sampler reads pg_locks every SAMPLE_SECONDS for a backend
waiting on a lock while running a statement on `api_usage`.

Verdicts:
- nothing lost: meter total >= 2xx (every call whose response was sent was counted before it was
  sent; the count commits before the answer leaves);
- nothing doubled: meter total <= 2xx + unanswered (only a request whose answer never arrived may
  have been counted: a worker killed between the count's commit and the answer);
- no request waited on the meter's row lock: no `still waiting for` line naming `api_usage` in the
  cluster's log, and no pg_locks sample caught one.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import free_port  # noqa: E402
from bench.stores import private_postgres, private_redis  # noqa: E402

SAMPLE_SECONDS = 0.01
LOCK_SETTINGS = {"log_lock_waits": "on", "deadlock_timeout": "1ms", "log_line_prefix": "%m [%p] "}
WAITING_ON_THE_METER = (
    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE NOT l.granted AND a.query ILIKE '%api_usage%'"
)


@dataclass
class Tally:
    """What the clients were answered, and the pg_locks sampler's findings."""

    statuses: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    samples: int = 0
    samples_waiting: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, outcome: str, seconds: float) -> None:
        with self.lock:
            self.statuses[outcome] += 1
            if outcome == "2xx":
                self.latencies.append(seconds)


def start_stores(tmp: Path) -> tuple[subprocess.Popen, str, str]:
    """A private PostgreSQL cluster and Redis, in one process group: (the group, database URL, Redis URL)."""
    postgres = private_postgres(free_port(), tmp / "pg", "meter", LOCK_SETTINGS)
    redis = private_redis(free_port(), tmp / "redis")
    script = "set -e\n" + postgres.start + redis.start + "echo ready\nwait\n"
    proc = subprocess.Popen(  # noqa: S603 - our own script
        ["bash", "-c", script],  # noqa: S607
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "ready":
            break
    else:
        raise SystemExit("bench.meter_load: the private stores did not start")
    url = postgres.url.replace("postgresql://", "postgresql+psycopg://", 1)
    return proc, url, redis.url


def prepare(settings: dict[str, str]) -> tuple[str, str]:
    """The schema, the demo accounts and one `scale` key of the demo developer (enterprise terms:
    no spend ceiling or balance, so no call meets a 402): (its id, its value)."""
    from flask_migrate import upgrade

    from app import create_app
    from app.core.extensions import db
    from app.models import User
    from app.services.apikeys import create_key
    from app.services.billing.enterprise import set_terms
    from app.services.billing.ledger import account_for
    from app.services.demo import DEMO_DEVELOPER, seed_accounts

    app = create_app(settings)
    with app.app_context():
        upgrade()
        seed_accounts()
        developer = db.session.scalar(db.select(User).where(User.email == DEMO_DEVELOPER["email"]))
        set_terms(account_for(developer), True, False, None, "benchmark")
        key, value = create_key(developer, "meter load", "secret", "scale")
        db.session.commit()
        return key.id, value


def start_server(settings: dict[str, str], workers: int, log_path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {
        **os.environ,
        **settings,
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        "WEB_THREADS": "1",
        "MCP_BIND": "off",
        "LOG_LEVEL": "WARNING",
    }
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "serve.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while len(workers_of(proc.pid)) < workers or not answers(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"bench.meter_load: the server did not start; see {log_path}")
        time.sleep(0.2)
    return proc, port


def workers_of(pid: int) -> list[int]:
    """granian's worker processes: the server process's children."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def answers(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False


def drive(port: int, value: str, rate: float, duration: float, clients: int, tally: Tally) -> None:
    """CLIENTS threads send the scheduled requests: request n at start + n / rate."""
    total = int(rate * duration)
    turn = iter(range(total))
    turn_lock = threading.Lock()
    start = time.monotonic() + 0.5

    def client() -> None:
        conn: http.client.HTTPConnection | None = None
        while True:
            with turn_lock:
                n = next(turn, None)
            if n is None:
                break
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            began = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/v1/roles", headers={"x-api-key": value})
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                tally.add("unanswered", 0.0)
                if conn is not None:
                    conn.close()
                conn = None
                continue
            outcome = "2xx" if 200 <= status < 300 else "429" if status == 429 else f"{status}"
            tally.add(outcome, time.monotonic() - began)
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def sample_locks(database_url: str, stop: threading.Event, tally: Tally) -> None:
    """Every SAMPLE_SECONDS: is a backend waiting on a lock while running a statement on api_usage?"""
    import psycopg

    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://", 1), autocommit=True) as conn:
        while not stop.is_set():
            row = conn.execute(WAITING_ON_THE_METER).fetchone()
            tally.samples += 1
            tally.samples_waiting += bool(row and row[0])
            time.sleep(SAMPLE_SECONDS)


def kill_a_worker(server: subprocess.Popen, at: float, killed: list[int]) -> None:
    time.sleep(at)
    workers = workers_of(server.pid)
    if workers:
        os.kill(workers[0], signal.SIGKILL)
        killed.append(workers[0])


def meter_total(database_url: str, key_id: str) -> tuple[int, int]:
    """The key's metered calls (the sum of its shards) and the number of shard rows."""
    import psycopg

    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://", 1)) as conn:
        total, rows = conn.execute(
            "SELECT coalesce(sum(count), 0), count(*) FROM api_usage WHERE key_id = %s", (key_id,)
        ).fetchone() or (0, 0)
    return int(total), int(rows)


def logged_lock_waits(log_path: Path) -> tuple[int, int]:
    """(lock waits the cluster logged, those whose statement was on api_usage)."""
    lines = log_path.read_text(errors="replace").splitlines() if log_path.exists() else []
    waits, on_meter = 0, 0
    for n, line in enumerate(lines):
        if "still waiting for" in line:
            waits += 1
            following = " ".join(lines[n + 1 : n + 4])
            on_meter += "api_usage" in following
    return waits, on_meter


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000 if ordered else 0.0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    ap.add_argument("--rate", type=float, default=100.0, help="requests a second (the scale plan's limit)")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--clients", type=int, default=8, help="concurrent client connections")
    ap.add_argument("--kill-at", type=float, default=0.5, help="share of the run after which a worker is killed")
    ap.add_argument("--no-kill", action="store_true")
    ap.add_argument("--json", default="", help="also write the figures here")
    a = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="credits-bench-meter-"))
    stores = server = None
    try:
        stores, database_url, redis_url = start_stores(tmp)
        settings = {
            "APP_ENV": "development",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "KEYS_DIR": str(tmp / "keys"),
            "SMTP_URL": "",
        }
        key_id, value = prepare(settings)
        server, port = start_server(settings, a.workers, tmp / "server.log")
        tally, stop, killed = Tally(), threading.Event(), []
        sampler = threading.Thread(target=sample_locks, args=(database_url, stop, tally), daemon=True)
        sampler.start()
        if not a.no_kill:
            threading.Thread(
                target=kill_a_worker, args=(server, 0.5 + a.duration * a.kill_at, killed), daemon=True
            ).start()
        began = time.monotonic()
        drive(port, value, a.rate, a.duration, a.clients, tally)
        elapsed = time.monotonic() - began
        stop.set()
        sampler.join()
        time.sleep(0.5)
        total, shard_rows = meter_total(database_url, key_id)
        waits, meter_waits = logged_lock_waits(tmp / "pg" / "postgres.log")
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        if stores is not None:
            os.killpg(stores.pid, signal.SIGTERM)
            stores.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)

    s = tally.statuses
    admitted, unanswered = s["2xx"], s["unanswered"]
    others = {k: v for k, v in s.items() if k not in ("2xx", "429", "unanswered")}
    figures = {
        "duration_s": a.duration,
        "rate": a.rate,
        "workers": a.workers,
        "sent": sum(s.values()),
        "admitted_2xx": admitted,
        "refused_429": s["429"],
        "other_statuses": others,
        "unanswered": unanswered,
        "worker_killed": killed[0] if killed else None,
        "meter_total": total,
        "meter_rows": shard_rows,
        "admitted_per_second": admitted / elapsed,
        "p50_ms": percentile(tally.latencies, 0.5),
        "p99_ms": percentile(tally.latencies, 0.99),
        "lock_waits_logged": waits,
        "lock_waits_logged_on_api_usage": meter_waits,
        "pg_locks_samples": tally.samples,
        "pg_locks_samples_waiting_on_api_usage": tally.samples_waiting,
        "nothing_lost": total >= admitted,
        "nothing_doubled": total <= admitted + unanswered,
        "exact": total == admitted,
        "no_meter_lock_waits": meter_waits == 0 and tally.samples_waiting == 0,
    }
    print(json.dumps(figures, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
