"""The sign-in beside a saturated catalog (issue 47, "the catalog can never starve the sign-in"):
discovery, the code exchange and userinfo, p50/p99 idle and while several clients send searches
as fast as the server takes them, through real HTTP against `python serve.py` (granian, as
production runs it).

    DATABASE_URL=postgresql+psycopg://credits_id@127.0.0.1:5432/<db with a generated catalog> \\
        .venv/bin/python -m bench.starvation --rounds 3 --seconds 15 --search-clients 6

The database must hold a catalog (`flask catalog generate`, a quarter or the full size): this
script adds a benchmark app, member and scale keys to it (fresh ones each run) and nothing else.
Each round measures, one client at a time over a keep-alive connection, the three sign-in
operations idle, then again while `--search-clients` clients (a process of their own) loop
`POST /v1/search` over the bench's keywords; a client refused with 503 (every catalog slot taken)
waits what its `Retry-After` asks, as a client should - the slot is still never idle: the client
holding it sends its next search at once - or, with `--retry-pause`, that many seconds whatever it
was asked: clients that ignore `Retry-After`, a storm of refusals for the server to answer.
Codes for the exchange are minted before each phase's load starts. `--guard off` runs the server
without the guard (no catalog slots, no statement bound, one thread a worker: how it was before);
`--catalog-cpus 1` gives the catalog pool a CPU of its own (CATALOG_CPUS), the sign-in the others.
`--pace 0.005` sends the sign-in's requests every 5 ms rather than back to back.
`--catalog-replica` (as root, with --catalog-cpus) starts a streaming replica of the database on the
catalog's CPUs and points CATALOG_DATABASE_URL at it (bench/replica.py): the catalog's statements
then run there, not in the primary's processes beside the sign-in.

Figures: wall milliseconds per request as the client sees them (the load generator shares the
machine's cores), the p99 ratio loaded / idle (target: at most 2), and what the search clients
got (answers per status, searches served a second).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.catalog import KEYWORDS  # noqa: E402
from bench.dataset import BENCH_LIMITS, CHEAP_ARGON2, REDIRECT_URI  # noqa: E402
from bench.replica import standby  # noqa: E402
from bench.run import load_harness  # noqa: E402
from bench.servers import free_port, stop, wait_for  # noqa: E402

DEFAULT_HARNESS = Path(os.environ.get("BENCH_HARNESS") or ROOT.parent / "shared" / "bench")
KEYS = 16  # scale keys the search clients rotate over: none of them is refused for its budget
SCOPE = "openid profile email offline_access credits:read"
OPERATIONS = ("discovery", "token", "userinfo")
TARGET = 2.0
# The signing keys of the catalog's database, kept between runs (the database remembers which one signs).
KEYS_DIR = ROOT / "instance" / "starvation-keys"


def prepare(database_url: str, keys_dir: str) -> dict[str, Any]:
    """A benchmark app, member and developer with KEYS scale keys (on enterprise terms: no call
    meets a 402), fresh for this run, in the catalog's database."""
    from flask_migrate import upgrade

    from app import create_app
    from app.core.extensions import db
    from app.models import Role
    from app.protocol.jwks import keystore
    from app.services.apikeys import create_key
    from app.services.billing.enterprise import set_terms
    from app.services.billing.ledger import account_for
    from app.services.catalog_seed import catalog_is_empty
    from app.services.members import create_member
    from app.services.registration import NewClient, register_client

    run = secrets.token_hex(4)
    app = create_app(
        {"APP_ENV": "development", "DATABASE_URL": database_url, "KEYS_DIR": keys_dir, **CHEAP_ARGON2, "SMTP_URL": ""}
    )
    with app.app_context():
        upgrade()
        if catalog_is_empty():
            raise SystemExit("bench.starvation: the database holds no catalog; run `flask catalog generate` first")
        keystore.ensure_key()
        client, secret = register_client(
            NewClient(name=f"Starvation {run}", client_id=f"starve-{run}", redirect_uris=[REDIRECT_URI], scope=SCOPE)
        )
        password = "correct horse battery staple"
        member = create_member(f"starve-{run}@example.test", "Starve Member", password, tier="pro")
        developer = create_member(f"starve-dev-{run}@example.test", "Starve Dev", password, role=Role.DEVELOPER)
        db.session.flush()
        set_terms(account_for(developer), True, False, None, "benchmark")
        keys = [create_key(developer, f"starve {n}", "secret", "scale", [], actor=developer)[1] for n in range(KEYS)]
        db.session.commit()
        return {
            "client_id": client.client_id,
            "client_secret": secret,
            "username": member.email,
            "password": password,
            "keys": keys,
        }


def start(a: argparse.Namespace, log_path: Path) -> tuple[subprocess.Popen, str, str]:
    """`python serve.py` (no tool server) as the options `a` ask, waited for; the process, its
    origin, and where the catalog is served (the catalog pool's origin with --catalog-pool, else
    the same)."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    catalog = f"http://127.0.0.1:{free_port()}" if a.catalog_pool else origin
    env = {
        **os.environ,
        "APP_ENV": "development",
        "ISSUER_URL": origin,
        "DATABASE_URL": a.database_url,
        "KEYS_DIR": str(KEYS_DIR),
        "SECRET_KEY": "bench-" + secrets.token_hex(24),
        "SMTP_URL": "",
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(a.workers),
        "MCP_BIND": "off",
        "LOG_LEVEL": "WARNING",
        **{k: str(v) for k, v in {**CHEAP_ARGON2, **BENCH_LIMITS}.items()},
    }
    if a.threads is not None:
        env["WEB_THREADS"] = str(a.threads)
    if a.catalog_pool:
        env["CATALOG_BIND"] = catalog.removeprefix("http://")
    if a.catalog_cpus:
        env["CATALOG_CPUS"] = a.catalog_cpus
    if a.catalog_database_url:
        env["CATALOG_DATABASE_URL"] = a.catalog_database_url
    if a.guard == "off":
        env.update({"CATALOG_SEARCH_CONCURRENCY": "0", "CATALOG_STATEMENT_TIMEOUT_MS": "0", "WEB_THREADS": "1"})
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "serve.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wait_for(origin + "/healthz", proc, log_path)  # stops the server and raises if it does not come up
    wait_for(catalog + "/healthz", proc, log_path)
    return proc, origin, catalog


# -- the search load: a process of its own ---------------------------------------------------------------


async def search_load(harness: Any, origin: str, keys: list[str], clients: int, pause: float | None) -> dict:
    """Searches from `clients` clients until SIGTERM; what they got. A refused client waits
    `pause` seconds, or what the refusal's Retry-After asks (None)."""
    host, port = origin.removeprefix("http://").split(":")
    statuses: dict[int, int] = {}
    served: list[float] = []
    stopping = asyncio.Event()
    began = time.monotonic()
    tasks: list[asyncio.Task] = []

    def stop() -> None:  # a client waiting on a slow answer is cancelled after 5 s
        stopping.set()
        asyncio.get_running_loop().call_later(5, lambda: [task.cancel() for task in tasks])

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)

    async def client(n: int) -> None:
        conn = harness.Conn(host, int(port))
        turn = n
        try:
            while not stopping.is_set():
                turn += 1
                body = json.dumps({"keyword": KEYWORDS[turn % len(KEYWORDS)]}).encode()
                headers = {"x-api-key": keys[turn % len(keys)], "Content-Type": "application/json"}
                started = time.perf_counter()
                try:
                    response = await conn.request("POST", origin + "/v1/search", headers, body)
                except Exception:
                    statuses[0] = statuses.get(0, 0) + 1
                    await conn.close()
                    conn = harness.Conn(host, int(port))
                    continue
                statuses[response.status] = statuses.get(response.status, 0) + 1
                if response.status == 200:
                    served.append(time.perf_counter() - started)
                else:
                    await asyncio.sleep(pause if pause is not None else float(response.header("Retry-After") or 1))
        finally:
            await conn.close()

    tasks.extend(asyncio.create_task(client(n)) for n in range(clients))
    await asyncio.gather(*tasks, return_exceptions=True)
    seconds = time.monotonic() - began
    ordered = sorted(served)
    return {
        "seconds": round(seconds, 1),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "served_per_second": round(len(served) / seconds, 1),
        "search_p50_ms": round(ordered[len(ordered) // 2] * 1000, 1) if ordered else None,
    }


def load_main(argv: list[str]) -> None:
    """`python -m bench.starvation --load ORIGIN CLIENTS PAUSE HARNESS OUT` (keys on stdin), until SIGTERM."""
    origin, clients, pause, harness_dir, out = argv
    keys = json.loads(sys.stdin.read())
    harness = load_harness(Path(harness_dir))
    result = asyncio.run(
        search_load(harness, origin, keys, int(clients), None if pause == "retry-after" else float(pause))
    )
    Path(out).write_text(json.dumps(result))


def start_load(a: argparse.Namespace, origin: str, keys: list[str], out: Path) -> subprocess.Popen:
    """The search clients, a process of their own: at `--load-nice`, standing for clients on other
    machines, whose work does not take the server's cores (0: as they are, on the same cores)."""
    pause = "retry-after" if a.retry_pause is None else str(a.retry_pause)
    argv = [str(a.search_clients), pause, a.harness, str(out)]
    proc = subprocess.Popen(  # noqa: S603 - this very script
        [sys.executable, "-m", "bench.starvation", "--load", origin, *argv],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        preexec_fn=(lambda: os.nice(a.load_nice)) if a.load_nice else None,  # noqa: PLW1509 - no thread runs yet
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(keys).encode())
    proc.stdin.close()
    return proc


# -- the sign-in, measured ----------------------------------------------------------------------------


def config(harness: Any, origin: str, facts: dict) -> Any:
    cfg = harness.Config(
        origin,
        facts["client_id"],
        facts["client_secret"],
        "basic",
        REDIRECT_URI,
        SCOPE,
        harness.Creds(facts["username"], facts["password"]),
        harness.load_driver("form"),
    )
    asyncio.run(harness.fetch_discovery(cfg))
    return cfg


async def measure(
    harness: Any, cfg: Any, codes: list, access_token: str, seconds: float, pace: float
) -> dict[str, list[float]]:
    """Each operation in turn, one client: discovery and userinfo for `seconds` each, then the
    exchange of every minted code; a request sent every `pace` seconds (0: each as soon as the
    last is answered)."""
    latencies: dict[str, list[float]] = {name: [] for name in OPERATIONS}
    discovery = cfg.issuer + "/.well-known/openid-configuration"
    userinfo = cfg.disc["userinfo_endpoint"]

    async def get(url: str, headers: dict[str, str] | None) -> bool:
        response = await conn.request("GET", url, headers)
        if response.status != 200:
            raise RuntimeError(f"{url}: {response.status}")
        return True

    host, port = cfg.hostport
    conn = harness.Conn(host, port)
    try:
        for name, url, headers in (
            ("discovery", discovery, None),
            ("userinfo", userinfo, {"Authorization": f"Bearer {access_token}"}),
        ):
            stop_at = time.monotonic() + seconds
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                await get(url, headers)
                latencies[name].append(time.perf_counter() - started)
                await _until(started + pace)
        for code, verifier in codes:
            started = time.perf_counter()
            tokens = await harness.exchange(cfg, conn, code, verifier)
            latencies["token"].append(time.perf_counter() - started)
            await _until(started + pace)
            if "id_token" not in tokens:
                raise RuntimeError("the exchange returned no ID token")
    finally:
        await conn.close()
    return latencies


async def _until(moment: float) -> None:
    """Wait until `moment` (time.perf_counter's clock), if it is still to come."""
    left = moment - time.perf_counter()
    if left > 0:
        await asyncio.sleep(left)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--load"]:
        load_main(argv[1:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15.0, help="seconds of discovery and of userinfo per phase")
    ap.add_argument("--codes", type=int, default=150, help="codes exchanged per phase")
    ap.add_argument("--search-clients", type=int, default=6)
    ap.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="seconds from one sign-in request to the next (0: back to back, the measuring client a core's load of its own)",
    )
    ap.add_argument(
        "--retry-pause", type=float, default=None, help="a refused search client's pause (s), whatever Retry-After asks"
    )
    ap.add_argument("--guard", choices=("on", "off"), default="on")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="WEB_THREADS (default: serve.py's)")
    ap.add_argument("--catalog-pool", action="store_true", help="the catalog on a pool of its own (CATALOG_BIND)")
    ap.add_argument(
        "--catalog-cpus", default="", help="CATALOG_CPUS: the catalog pool's own CPUs (with --catalog-pool)"
    )
    ap.add_argument(
        "--catalog-replica",
        action="store_true",
        help="the catalog's reads on a streaming replica started on --catalog-cpus (bench/replica.py; as root)",
    )
    ap.set_defaults(catalog_database_url="")  # the replica's URL, once --catalog-replica has started it
    ap.add_argument("--load-nice", type=int, default=0, help="the search clients' niceness (19: as if remote)")
    ap.add_argument("--harness", default=str(DEFAULT_HARNESS))
    ap.add_argument("--json", default="", help="also write the figures here")
    a = ap.parse_args(argv)
    if not a.database_url:
        raise SystemExit("bench.starvation: --database-url (or DATABASE_URL) names the database with the catalog")
    if a.catalog_replica and not a.catalog_cpus:
        raise SystemExit("bench.starvation: --catalog-replica runs the replica on --catalog-cpus: name them")
    with ExitStack() as replica:
        if a.catalog_replica:
            print("starting the catalog's replica (pg_basebackup of the whole cluster)", file=sys.stderr)
            a.catalog_database_url = replica.enter_context(standby(a.catalog_cpus, a.database_url, free_port()))
        run(a)


def run(a: argparse.Namespace) -> None:
    """Prepare, start the server, measure each round idle and loaded, report."""
    a.harness = str(Path(a.harness).resolve())
    harness = load_harness(Path(a.harness))
    tmp = Path(tempfile.mkdtemp(prefix="credits-bench-starvation-"))
    proc = None
    phases: dict[str, dict[str, list[float]]] = {
        "idle": {n: [] for n in OPERATIONS},
        "loaded": {n: [] for n in OPERATIONS},
    }
    loads: list[dict] = []
    load: subprocess.Popen | None = None
    try:
        facts = prepare(a.database_url, str(KEYS_DIR))
        proc, origin, catalog = start(a, tmp / "server.log")
        cfg = config(harness, origin, facts)
        warm = asyncio.run(harness.mint_codes(cfg, 2, 1))
        token = asyncio.run(harness.exchange(cfg, harness.Conn(*cfg.hostport), *warm[0]))["access_token"]
        for round_no in range(a.rounds):
            for phase in ("idle", "loaded"):
                codes = asyncio.run(harness.mint_codes(cfg, a.codes, 2))
                load = None
                result_file = tmp / f"load-{round_no}.json"
                if phase == "loaded":
                    load = start_load(a, catalog, facts["keys"], result_file)
                    time.sleep(3)  # the search clients at full speed before anything is measured
                measured = asyncio.run(measure(harness, cfg, codes, token, a.seconds, a.pace))
                for name, values in measured.items():
                    phases[phase][name].extend(values)
                if load is not None:
                    load.terminate()  # SIGTERM: the clients stop and write what they got
                    load.wait(timeout=60)
                    load = None
                    loads.append(json.loads(result_file.read_text()))
            print(f"round {round_no + 1} of {a.rounds} done", file=sys.stderr)
        report(phases, loads, a)
    except Exception:
        log = tmp / "server.log"
        if log.exists():
            print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def report(phases: dict[str, dict[str, list[float]]], loads: list[dict], a: argparse.Namespace) -> None:
    rows = {}
    print(
        f"\nsign-in beside {a.search_clients} search clients (niceness {a.load_nice}, a refused one waits "
        f"{'as Retry-After asks' if a.retry_pause is None else f'{a.retry_pause} s'}), guard {a.guard}, "
        f"catalog pool {'on' if a.catalog_pool else 'off'}"
        f"{f' on CPUs {a.catalog_cpus}' if a.catalog_cpus else ''}"
        f"{', its reads on a replica there' if a.catalog_replica else ''}, "
        f"{a.workers} workers x {a.threads or 'serve.py default'} threads, {a.rounds} rounds, "
        f"sign-in requests {f'every {a.pace * 1000:g} ms' if a.pace else 'back to back'}"
    )
    print(
        f"{'operation':<10} {'idle p50':>9} {'idle p99':>9} {'loaded p50':>11} {'loaded p99':>11} {'p99 ratio':>10}  n"
    )
    for name in OPERATIONS:
        idle, loaded = phases["idle"][name], phases["loaded"][name]
        row = {
            "idle_p50_ms": round(percentile(idle, 0.5), 2),
            "idle_p99_ms": round(percentile(idle, 0.99), 2),
            "loaded_p50_ms": round(percentile(loaded, 0.5), 2),
            "loaded_p99_ms": round(percentile(loaded, 0.99), 2),
            "n": (len(idle), len(loaded)),
        }
        row["p99_ratio"] = round(row["loaded_p99_ms"] / row["idle_p99_ms"], 2)
        rows[name] = row
        mark = "ok" if row["p99_ratio"] <= TARGET else "MISSED"
        print(
            f"{name:<10} {row['idle_p50_ms']:>9} {row['idle_p99_ms']:>9} {row['loaded_p50_ms']:>11} "
            f"{row['loaded_p99_ms']:>11} {row['p99_ratio']:>9}x  {row['n']} {mark}"
        )
    print("(ms as the client sees them; the loaded p99 at most 2x the idle p99 is the target)")
    for n, load in enumerate(loads, 1):
        print(
            f"search load, round {n}: {load['served_per_second']} searches/s served (p50 {load['search_p50_ms']} ms), "
            f"answers by status {load['statuses']} over {load['seconds']} s"
        )
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "loads": loads, "args": vars(a)}, indent=2))


if __name__ == "__main__":
    main()
