"""`make bench`: Credits ID under granian (production's server) against node oidc-provider, in one session.

This builds on the shared load harness of issue 7 (`../shared/bench/`: `oidcperf.py` drives any
OpenID Connect provider, `run-peer.sh` starts the peer, `make_tables.py` renders its JSON). The
harness is called, not copied: point `--harness` (or BENCH_HARNESS) at it when it is not beside
the repository. What this script adds:

- the prepared dataset (bench/dataset.py) and the provider under granian on a free loopback port,
  with its metrics in multiprocess mode as serve.py runs it in production;
- the round trip twice: with the real argon2id cost, and with a cheap bench-only hasher
  (ARGON2_* settings) so it compares with the peer, which hashes no password;
- the SSO round trip (a member who already has a session: /authorize answers with the code);
- the floor: a Flask "hello" JSON endpoint (bench/hello.py) under the same server settings;
- the stack's floor: the peer's work done by Flask + Authlib alone, in memory
  (bench/floor_provider.py), so each peer ratio can be read against what the stack itself costs;
- PostgreSQL figures for the token endpoint beside the SQLite ones;
- bearer GET endpoints from `EXTRA_ENDPOINTS` (the /v1 data API goes there);
- one table: req/s, p50, p99 and server CPU ms per operation, ours and the peer's, and the ratio.

Compare server CPU per operation first: the load generator shares the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

from bench import floor_provider
from bench.dataset import BENCH_LIMITS, CATALOG_CREDITS, CHEAP_ARGON2, REDIRECT_URI
from bench.servers import (
    DEFAULT_THREADS,
    PEER_PORT,
    SERVERS,
    ServerSettings,
    free_port,
    start_peer,
    start_server,
    stop,
    wait_for,
)
from bench.stores import Store, private_postgres, private_redis, start_with_store, stop_group

ROOT = Path(__file__).resolve().parent.parent
# The load test is one client hammering the token endpoint: lift the per-client throttle (300 a
# minute by default) so the benchmark measures work, not 429s. Throttling has its own tests.
DEFAULT_HARNESS = ROOT.parent / "shared" / "bench"

# The peer's fixed test client and member (see the harness's peer/server.js).
PEER = {
    "client_id": "perf-conf",
    "client_secret": "perf-conf-secret-0123456789abcdef0123456789abcdef",
    "username": "alice",
    "password": "correct horse battery staple",
    "driver": "peer",
}
SCOPE = "openid profile email offline_access"  # what the harness requests (the peer's scopes)
SSO_SCOPE = "openid profile email"  # already consented: no page is shown


@dataclass(frozen=True)
class Endpoint:
    """A GET endpoint measured like userinfo: a fresh bearer token per run when `bearer`."""

    name: str
    path: str  # relative to the issuer; `{member_credits}` etc. are filled from the dataset's facts
    bearer: bool = True
    scope: str = SCOPE  # the token is obtained with this scope
    concurrency: tuple[int, ...] = (1, 16)
    on_peer: bool = False  # the peer serves it too
    p99_target_ms: float | None = None


# Endpoints beyond the harness's standard set: the /v1 data API, a first page and the last page
# of the member's own credits (thousands of them, in a catalog of 120k: bench/dataset.py).
V1_SCOPE = "openid credits:read"
EXTRA_ENDPOINTS: list[Endpoint] = [
    Endpoint("v1-credits-first-page", "/v1/me/credits?limit=50", scope=V1_SCOPE, concurrency=(1,), p99_target_ms=30),
    Endpoint(
        "v1-credits-last-page",
        "/v1/me/credits?limit=50&offset={last_page_offset}",
        scope=V1_SCOPE,
        concurrency=(1,),
        p99_target_ms=30,
    ),
    Endpoint("v1-me", "/v1/me", scope=V1_SCOPE, concurrency=(1,)),
]

P99_TARGETS = {ep.name: ep.p99_target_ms for ep in EXTRA_ENDPOINTS if ep.p99_target_ms is not None}

PROFILES = {
    "quick": {
        "repeat": 1,
        "get_duration": 3,
        "get_concurrency": "1",
        "rt_duration": 5,
        "rt_concurrency": "1",
        "codes": 300,
        "token_concurrency": "1",
        "refresh_duration": 4,
        "refresh_concurrency": "1,8",
        "userinfo_concurrency": "1",
    },
    "standard": {
        "repeat": 3,
        "get_duration": 5,
        "get_concurrency": "1,16",
        "rt_duration": 8,
        "rt_concurrency": "1,8",
        "codes": 600,
        "token_concurrency": "1,8",
        "refresh_duration": 6,
        "refresh_concurrency": "1,8",
        "userinfo_concurrency": "1,16",
    },
}
TARGETS = {  # ours / the in-memory peer, server CPU per operation (issue 7)
    "token": 1.0,
    "refresh": 1.0,
    "roundtrip": 1.0,
    "sso": 1.0,
    "userinfo": 2.0,
}
# Ours / the database-backed peer on the same kind of store (issue 20), server and store CPU per
# operation: ours on SQLite against the peer on Redis, ours on PostgreSQL against the peer on PostgreSQL.
PERSISTENT_TARGETS = {
    "token(code+PKCE) c=1": 1.0,
    "refresh(rotate) c=1": 1.0,
    "userinfo c=1": 1.3,
    "roundtrip c=1": 1.5,
    "refresh(rotate) c=8": 1.5,
}
PERSISTENT_PAIRS = (
    ("ours", "peer-redis", "SQLite", "Redis"),
    ("ours-postgresql", "peer-pg", "PostgreSQL", "PostgreSQL"),
)
FLOOR_TARGET = 1.2
FLOOR_TESTS = ("discovery", "jwks", "hello")  # ours: measured in turn by Bench.floor
HARNESS_TESTS = (
    "discovery",
    "jwks",
    "roundtrip",
    "token",
    "refresh",
    "userinfo",
)  # oidcperf's own  # discovery and JWKS: within 1.2x of the Flask hello endpoint


def load_harness(path: Path):
    """Import the shared oidcperf module, or stop with a clear message when it is absent."""
    script = path / "oidcperf.py"
    if not script.is_file():
        raise SystemExit(
            f"bench: the shared load harness is not at {script}.\n"
            "Issue 7 measures with ../shared/bench/oidcperf.py (and run-peer.sh, make_tables.py); "
            "pass --harness DIR or set BENCH_HARNESS to the folder that holds them."
        )
    spec = importlib.util.spec_from_file_location("oidcperf", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules["oidcperf"] = module
    spec.loader.exec_module(module)
    return module


def start_persistent_peer(
    harness: Path, work: Path, adapter: str, store: Store, log_path: Path
) -> tuple[subprocess.Popen, str]:
    """node oidc-provider with its Redis or PostgreSQL adapter (shared/bench/peer-persistent) on
    `store`, in one process tree with it (`start_with_store`), ready; its npm packages installed
    once, in `work`, outside the repository. Returns the tree's root process and the issuer."""
    source = harness / "peer-persistent"
    if not source.is_dir():
        raise SystemExit(f"bench: the database-backed peer is not at {source}")
    work.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_file():
            shutil.copy2(item, work / item.name)
    if not (work / "node_modules" / "oidc-provider").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=work, check=True)  # noqa: S607
    port = free_port()
    env = {
        **os.environ,
        "PEER_ADAPTER": adapter,
        "PORT": str(port),
        "NODE_ENV": "production",
        "PEER_STATE_DIR": str(work),
        "REDIS_URL": store.url,
        "PG_URL": store.url,
    }
    proc = start_with_store(store, "", ["node", "server.js"], env, work, log_path)
    issuer = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{issuer}/.well-known/openid-configuration", proc, log_path, timeout=600)
    except BaseException:
        stop_group(proc)
        raise
    return proc, issuer


@dataclass
class Target:
    """One provider under test and how to drive it."""

    label: str
    issuer: str
    pid: int
    client_id: str
    client_secret: str
    username: str
    password: str
    driver: str = "form"
    results: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)  # about its dataset, for EXTRA_ENDPOINTS paths


def peer_target(label: str, issuer: str, pid: int) -> Target:
    """A node oidc-provider peer: the harness's fixed client and member (PEER)."""
    return Target(
        label,
        issuer,
        pid,
        PEER["client_id"],
        PEER["client_secret"],
        PEER["username"],
        PEER["password"],
        PEER["driver"],
    )


def harness_config(op, t: Target, scope: str = SCOPE, issuer: str | None = None):
    """The shared harness's client configuration for target `t` (`op`: the loaded oidcperf module),
    at `issuer` when it is not the target's own."""
    return op.Config(
        issuer or t.issuer,
        t.client_id,
        t.client_secret,
        "basic",
        REDIRECT_URI,
        scope,
        op.Creds(t.username, t.password),
        op.load_driver(t.driver),
    )


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.a = args
        args.harness = str(Path(args.harness).resolve())
        self.op = load_harness(Path(args.harness))
        self.p = dict(PROFILES[args.profile])
        if args.repeat:
            self.p["repeat"] = args.repeat
        self.tests = args.tests.split(",")
        self.out = Path(args.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="credits-bench-"))
        self.server = ServerSettings(args.workers, args.threads, args.server)
        self.procs: list[subprocess.Popen] = []
        self.groups: list[subprocess.Popen] = []  # targets started with a store of their own

    # -- processes ------------------------------------------------------------------------

    def dataset(self, database_url: str, argon2: dict, keys_name: str, catalog: bool = False) -> dict:
        """A prepared dataset; the demo catalog only where the /v1 reads are measured."""
        keys = self.tmp / keys_name
        env = {**os.environ, **{k: str(v) for k, v in argon2.items()}, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(  # noqa: S603 - our own fixed argv
            [
                sys.executable,
                "-m",
                "bench.dataset",
                "--database-url",
                database_url,
                "--keys-dir",
                str(keys),
                "--scale",
                str(self.a.scale),
                "--catalog-credits",
                str(self.a.catalog_credits if catalog else 0),
                "--json",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise SystemExit(f"bench: preparing the dataset failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    def provider(self, data: dict, argon2: dict, label: str) -> Target:
        port = free_port()
        issuer = f"http://127.0.0.1:{port}"
        env = {
            "APP_ENV": "development",
            "ISSUER_URL": issuer,
            "DATABASE_URL": data["database_url"],
            "KEYS_DIR": data["keys_dir"],
            "SECRET_KEY": "bench-" + secrets.token_hex(24),
            **argon2,
            **BENCH_LIMITS,
        }
        # Metrics in multiprocess mode, as serve.py runs the provider in production (a file per worker).
        env["PROMETHEUS_MULTIPROC_DIR"] = str(Path(tempfile.mkdtemp(prefix=f"metrics-{label}-", dir=self.tmp)))
        proc = start_server(
            "wsgi:app", port, env, self.tmp / f"{label}.log", self.server, "/.well-known/openid-configuration"
        )
        self.procs.append(proc)
        credits = int(data.get("member_credits") or 0)
        return Target(
            label,
            issuer,
            proc.pid,
            data["client_id"],
            data["client_secret"],
            data["username"],
            data["password"],
            facts={"member_credits": credits, "last_page_offset": max(0, credits - 50)},
        )

    def provider_on_postgres(self, argon2: dict, label: str) -> Target:
        """Ours on a private PostgreSQL cluster started inside its process tree (bench/stores.py): the
        cluster's CPU is counted with the provider's, as the peer's store is with the peer's."""
        port = free_port()
        issuer = f"http://127.0.0.1:{port}"
        store = private_postgres(free_port(), self.tmp / f"{label}-store", "credits_id_bench")
        database_url = store.url.replace("postgresql://", "postgresql+psycopg://")
        keys, facts = self.tmp / f"keys-{label}", self.tmp / f"{label}-dataset.json"
        prepare = shlex.join(
            [
                sys.executable,
                "-m",
                "bench.dataset",
                "--database-url",
                database_url,
                "--keys-dir",
                str(keys),
                "--scale",
                str(self.a.scale),
                "--catalog-credits",
                "0",
                "--json",
            ]
        )
        env = {
            **os.environ,
            **{k: str(v) for k, v in argon2.items()},
            "PYTHONPATH": str(ROOT),
            "APP_ENV": "development",
            "ISSUER_URL": issuer,
            "DATABASE_URL": database_url,
            "KEYS_DIR": str(keys),
            "SECRET_KEY": "bench-" + secrets.token_hex(24),
            **{k: str(v) for k, v in BENCH_LIMITS.items()},
            "PROMETHEUS_MULTIPROC_DIR": str(Path(tempfile.mkdtemp(prefix=f"metrics-{label}-", dir=self.tmp))),
        }
        log_path = self.tmp / f"{label}.log"
        proc = start_with_store(
            store, f"{prepare} > {shlex.quote(str(facts))}", self.server.argv(port, "wsgi:app"), env, ROOT, log_path
        )
        self.groups.append(proc)
        wait_for(f"{issuer}/.well-known/openid-configuration", proc, log_path, timeout=600)
        data = json.loads(facts.read_text().strip().splitlines()[-1])
        return Target(
            label, issuer, proc.pid, data["client_id"], data["client_secret"], data["username"], data["password"]
        )

    def persistent_peer(self, adapter: str) -> Target:
        """node oidc-provider with its Redis or PostgreSQL adapter, its store private and inside its
        process tree."""
        label = {"redis": "peer-redis", "pg": "peer-pg"}[adapter]
        store: Store = (
            private_redis(free_port(), self.tmp / f"{label}-store")
            if adapter == "redis"
            else private_postgres(free_port(), self.tmp / f"{label}-store", "perf_peer")
        )
        proc, issuer = start_persistent_peer(
            Path(self.a.harness), Path(self.a.peer_work + "-persistent"), adapter, store, self.tmp / f"{label}.log"
        )
        self.groups.append(proc)
        return peer_target(label, issuer, proc.pid)

    def hello(self) -> tuple[subprocess.Popen, str]:
        port = free_port()
        proc = start_server("bench.hello:app", port, {}, self.tmp / "hello.log", self.server, "/hello")
        self.procs.append(proc)
        return proc, f"http://127.0.0.1:{port}/hello"

    def stack_floor(self) -> Target:
        """Flask + Authlib doing the peer's work in memory: one worker, since its state is that
        process's memory (the peer, too, is one process)."""
        port = free_port()
        settings = ServerSettings(1, self.server.threads, self.server.server)
        proc = start_server(
            "bench.floor_provider:app",
            port,
            {},
            self.tmp / "stack-floor.log",
            settings,
            "/.well-known/openid-configuration",
        )
        self.procs.append(proc)
        f = floor_provider
        return Target(
            "stack-floor", f"http://127.0.0.1:{port}", proc.pid, f.CLIENT_ID, f.CLIENT_SECRET, f.USERNAME, f.PASSWORD
        )

    def peer(self) -> Target:
        proc = start_peer(Path(self.a.harness) / "run-peer.sh", self.tmp / "peer.log", Path(self.a.peer_work))
        self.procs.append(proc)
        return peer_target("peer", f"http://127.0.0.1:{PEER_PORT}", proc.pid)

    # -- measuring ------------------------------------------------------------------------

    def harness_run(self, t: Target, tests: list[str], name: str, repeat: int | None = None) -> list:
        """The standard tests, by the shared harness's own command line (its JSON format);
        `repeat` runs of each (default: the profile's)."""
        tests = [x for x in tests if x in HARNESS_TESTS]
        if not tests:
            return []
        out = self.out / f"{name}.json"
        p = self.p
        # `--name=value`: a generated secret may start with "-", which argparse would take for an option.
        argv = [
            sys.executable,
            str(Path(self.a.harness) / "oidcperf.py"),
            "--issuer",
            t.issuer,
            f"--client-id={t.client_id}",
            f"--client-secret={t.client_secret}",
            "--auth",
            "basic",
            "--driver",
            t.driver,
            f"--username={t.username}",
            f"--password={t.password}",
            "--server-pid",
            str(t.pid),
            "--tests",
            ",".join(tests),
            "--repeat",
            str(repeat or p["repeat"]),
            "--get-duration",
            str(p["get_duration"]),
            "--get-concurrency",
            p["get_concurrency"],
            "--rt-duration",
            str(p["rt_duration"]),
            "--rt-concurrency",
            p["rt_concurrency"],
            "--codes",
            str(p["codes"]),
            "--token-concurrency",
            p["token_concurrency"],
            "--refresh-duration",
            str(p["refresh_duration"]),
            "--refresh-concurrency",
            p["refresh_concurrency"],
            "--userinfo-concurrency",
            p["userinfo_concurrency"],
            "--out",
            str(out),
        ]
        if self.a.no_wrk:
            argv.append("--no-wrk")
        print(f"\n== {name}: {t.issuer} {' '.join(tests)}", flush=True)
        subprocess.run(argv, check=True)  # noqa: S603 - our own fixed argv
        return json.loads(out.read_text())["results"]

    def config(self, t: Target, scope: str = SCOPE, issuer: str | None = None):
        return harness_config(self.op, t, scope, issuer)

    def record(self, group: str, runs: list) -> dict:
        for r in runs:
            r.pop("_lat", None)
        s = {"group": group, "runs": runs}
        for k in ("rps", "p50_ms", "p99_ms", "server_cpu_ms_per_op", "client_cpu_ms_per_op"):
            s[k] = self.op.median_spread(runs, k)
        cpu = s["server_cpu_ms_per_op"]
        print(
            f"{group:34s} rps={s['rps']['median'] if s['rps'] else None} "
            f"p50={s['p50_ms']['median'] if s['p50_ms'] else None}ms "
            f"p99={s['p99_ms']['median'] if s['p99_ms'] else None}ms "
            f"srvcpu={cpu['median'] if cpu else None}ms/op errors={sum(r['errors'] for r in runs)}",
            flush=True,
        )
        return s

    async def _sso(self, t: Target, conc: int) -> dict:
        """A member with a session asks again: /authorize must answer with the code (no page)."""
        op = self.op
        cfg = self.config(t)
        await op.fetch_discovery(cfg)
        signed_in: set[int] = set()
        hops: list[int] = []

        async def work(conn, jar):
            if id(jar) not in signed_in:  # sign in once per browser, through the pages
                await op.roundtrip(cfg, conn, jar)
                signed_in.add(id(jar))
            _verifier, challenge = op.pkce_pair()
            state = secrets.token_urlsafe(12)
            q = urlencode(
                {
                    "response_type": "code",
                    "client_id": cfg.client_id,
                    "redirect_uri": cfg.redirect_uri,
                    "scope": SSO_SCOPE,
                    "state": state,
                    "nonce": secrets.token_urlsafe(12),
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                }
            )
            resp = await conn.request("GET", cfg.disc["authorization_endpoint"] + "?" + q, jar=jar)
            n = 1
            while resp.status in (302, 303) and n < 10:
                loc = urljoin(resp.url, resp.header("location"))
                if loc.startswith(cfg.redirect_uri):
                    qs = parse_qs(urlsplit(loc).query)
                    if "code" not in qs or qs.get("state", [None])[0] != state:
                        raise op.HTTPError(f"sso: callback without code: {loc}")
                    hops.append(n)
                    return True
                resp = await conn.request("GET", loc, jar=jar)
                n += 1
            raise op.HTTPError(f"sso: no code without a page ({resp.status} at {resp.url})")

        res, _ = await op.run_loops(
            cfg, conc, work, duration=self.p["rt_duration"], server_pid=t.pid, name="sso", warmup=1.5
        )
        res["http_requests_per_op"] = statistics.median(hops) if hops else None
        res["concurrency"] = conc
        return res

    def sso(self, t: Target, repeat: int | None = None) -> list:
        out = []
        for c in [int(x) for x in self.p["rt_concurrency"].split(",")]:
            runs = [asyncio.run(self._sso(t, c)) for _ in range(repeat or self.p["repeat"])]
            out.append(self.record(f"sso c={c}", runs))
        return out

    async def _get(self, t: Target, url: str, conc: int, name: str, scope: str | None, pid: int) -> dict:
        op = self.op
        cfg = self.config(t, scope=scope or SCOPE, issuer=None if url.startswith(t.issuer) else url)
        headers = None
        if scope is not None:
            await op.fetch_discovery(cfg)
            token = (await op.prepare_tokens(cfg, 1))[0]["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
        return await op.get_test(cfg, url, conc, self.p["get_duration"], pid, name, headers, not self.a.no_wrk, None)

    def get_endpoint(
        self,
        t: Target,
        url: str,
        name: str,
        concurrency,
        scope: str | None = None,
        pid: int | None = None,
        repeat: int | None = None,
    ) -> list:
        out = []
        for c in concurrency:
            runs = [
                asyncio.run(self._get(t, url, c, name, scope, pid or t.pid)) for _ in range(repeat or self.p["repeat"])
            ]
            out.append(self.record(f"{name} c={c}", runs))
        return out

    def one_run(self, name: str, t: Target, test: str, hello_url: str | None, hello_pid: int | None, n: int) -> list:
        """Run `n` (1-based) of `test` on target `name`: its result groups, each with one run."""
        if test in HARNESS_TESTS:
            return self.harness_run(t, [test], f"{name}-{test}-{n}", repeat=1)
        if test == "hello":
            concurrency = [int(x) for x in self.p["get_concurrency"].split(",")]
            return self.get_endpoint(t, hello_url, "hello", concurrency, pid=hello_pid, repeat=1)
        return self.sso(t, repeat=1)

    def floor(self, t: Target, hello_url: str | None, hello_pid: int | None) -> list:
        """Discovery, the key set and the hello endpoint measured run by run in turn (D, J, H, D,
        J, H, ...) by the harness's own GET client: a change in the machine's load during the
        session then hits all three alike, and their ratio is the target. (Measured one test
        after the other, the ratio moved by ±20 % between sessions of the same code.)"""
        tests = [
            (name, t.issuer + path, t.pid)
            for name, path in (("discovery", "/.well-known/openid-configuration"), ("jwks", "/api/auth/jwks"))
            if name in self.tests
        ]
        if hello_url is not None:
            tests.append(("hello", hello_url, hello_pid))
        runs: dict[str, list] = {}
        for c in [int(x) for x in self.p["get_concurrency"].split(",")]:
            for _ in range(self.p["repeat"]):
                for name, url, pid in tests:
                    runs.setdefault(f"{name} c={c}", []).append(asyncio.run(self._get(t, url, c, name, None, pid)))
        return [self.record(group, group_runs) for group, group_runs in runs.items()]

    def extras(self, t: Target, is_peer: bool) -> list:
        out = []
        for ep in EXTRA_ENDPOINTS:
            if ep.name in self.tests or "extra" in self.tests:
                if is_peer and not ep.on_peer:
                    continue
                out += self.get_endpoint(
                    t, t.issuer + ep.path.format(**t.facts), ep.name, ep.concurrency, ep.scope if ep.bearer else None
                )
        return out

    def save(self, name: str, t: Target | None, results: list) -> Path:
        path = self.out / f"{name}.json"
        meta = {
            "target": name,
            "issuer": t.issuer if t else None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "profile": self.a.profile,
            "scale": self.a.scale,
            "server": {**vars(self.server), **({"workers": 1} if name == "stack-floor" else {})},
        }
        path.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
        return path

    # -- the session ----------------------------------------------------------------------

    def run(self) -> int:
        """Start every server first, then run each test on each of them in turn (ours, the peer,
        ours with the real hash cost, ours on PostgreSQL), run by run, so a change in the
        machine's load during the session hits both providers alike."""
        machine = machine_info()
        print("machine:", json.dumps(machine), flush=True)
        ours_on = "ours" in self.a.targets
        targets: dict[str, Target] = {}
        hello_url = hello_pid = None
        results: dict[str, list] = {}
        try:
            if ours_on:
                data = self.dataset(
                    f"sqlite:///{self.tmp / 'bench.sqlite3'}",
                    CHEAP_ARGON2,
                    "keys",
                    catalog="extra" in self.tests or any(ep.name in self.tests for ep in EXTRA_ENDPOINTS),
                )
                targets["ours"] = self.provider(data, CHEAP_ARGON2, "ours")
                if "roundtrip" in self.tests and not self.a.no_real_hash:
                    # the configured (production) argon2id cost, from app/core/config.py or the environment
                    data = self.dataset(f"sqlite:///{self.tmp / 'bench-real.sqlite3'}", {}, "keys-real")
                    targets["ours-real-hash"] = self.provider(data, {}, "ours-real-hash")
                if "postgresql" in self.a.database.split(","):
                    targets["ours-postgresql"] = self.provider_on_postgres(CHEAP_ARGON2, "ours-postgresql")
                if "hello" in self.tests:
                    hello_proc, hello_url = self.hello()
                    hello_pid = hello_proc.pid
            if "stack-floor" in self.a.targets:
                targets["stack-floor"] = self.stack_floor()
            for adapter, label in (("redis", "peer-redis"), ("pg", "peer-pg")):
                if label in self.a.targets.split(","):
                    targets[label] = self.persistent_peer(adapter)
            if "peer" in self.a.targets.split(","):
                targets["peer"] = self.peer()
            plan = {  # which provider runs which test
                "ours": (*HARNESS_TESTS, "hello", "sso"),
                "peer": (*HARNESS_TESTS, "sso"),
                "peer-redis": ("roundtrip", "token", "refresh", "userinfo", "sso"),
                "peer-pg": ("roundtrip", "token", "refresh", "userinfo", "sso"),
                "stack-floor": ("roundtrip", "token", "refresh", "userinfo", "sso"),
                "ours-real-hash": ("roundtrip",),
                "ours-postgresql": ("roundtrip", "token", "refresh", "userinfo", "sso"),
            }
            if "ours" in targets and ({"discovery", "jwks", "hello"} & set(self.tests)):
                results.setdefault("ours", []).extend(self.floor(targets["ours"], hello_url, hello_pid))
            # Run by run: the first run of a test on every target, then the second on every
            # target, ... so a spell of load on the machine (a shared VM's is often a minute or two)
            # falls on one run of each side rather than on all the runs of one side.
            for test in [t for t in self.tests if t != "extra"]:
                on = [
                    (name, t)
                    for name, t in targets.items()
                    if test in plan[name] and not (name == "ours" and test in FLOOR_TESTS)
                ]
                runs: dict[str, dict[str, list]] = {}  # target -> group -> its runs, in order
                for n in range(1, self.p["repeat"] + 1):
                    for name, t in on:
                        for group in self.one_run(name, t, test, hello_url, hello_pid, n):
                            runs.setdefault(name, {}).setdefault(group["group"], []).extend(group["runs"])
                for name, groups in runs.items():
                    results.setdefault(name, []).extend(self.record(g, group_runs) for g, group_runs in groups.items())
            for name, t in targets.items():
                if name in ("ours", "peer"):
                    results.setdefault(name, []).extend(self.extras(t, is_peer=name == "peer"))
        finally:
            for proc in list(self.procs):
                stop(proc)
            for proc in self.groups:
                stop_group(proc)
        files: dict[str, Path] = {}
        for name, res in results.items():
            for g in res:
                if name == "ours-real-hash":
                    g["group"] = g["group"].replace("roundtrip", "roundtrip (real argon2id)")
                elif name == "ours-postgresql":
                    g["group"] += " [PostgreSQL]"
            files[name] = self.save(name, targets.get(name), res)
        machine["load_after"] = os.getloadavg()
        report = render_report(files, machine, self.a)
        (self.out / "report.md").write_text(report)
        print("\n" + report)
        print(f"results: {self.out}")
        if not self.a.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return 0


# -- the report ----------------------------------------------------------------------------


def machine_info() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    node = shutil.which("node")
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip() if node else None  # noqa: S603 - our own fixed argv
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "node": node_version,
        "kernel": platform.release(),
        "load_before": os.getloadavg(),
    }


def _groups(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    return {g["group"]: g for g in json.loads(path.read_text())["results"]}


def _m(stat, nd=3) -> str:
    return f"{stat['median']:,.{nd}f}" if stat else "n/a"


def _spread(stat, nd=3) -> str:
    if not stat:
        return "n/a"
    if stat["min"] == stat["max"]:
        return f"{stat['median']:,.{nd}f}"
    return f"{stat['median']:,.{nd}f} ({stat['min']:,.{nd}f}–{stat['max']:,.{nd}f})"


def _kind(group: str) -> str:
    name = group.split(" ")[0].split("(")[0]
    return {"token": "token"}.get(name, name)


def _ratio(a: dict | None, b: dict | None) -> float | None:
    return a["median"] / b["median"] if a and b else None


def _x(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}×"


def _our_group(label: str, group: str) -> str:
    """Our result's name for the peer's `group`: our PostgreSQL runs carry a suffix."""
    return group + (" [PostgreSQL]" if label == "ours-postgresql" else "")


def _persistent_table(files: dict) -> list[str]:
    """The main comparison (issue 20): each store kind against the peer on the same kind, the stores'
    own CPU counted on both sides (bench/stores.py); the in-memory peer beside them."""
    memory_peer = _groups(files.get("peer"))
    pairs = [
        (label, _groups(files.get(ours)), _groups(files.get(peer)), ours_store, peer_store)
        for ours, peer, ours_store, peer_store in PERSISTENT_PAIRS
        for label in [ours]
        if files.get(ours) and files.get(peer)
    ]
    if not pairs:
        return []
    head = "| test |" + "".join(f" ours on {o} | peer on {p} | ours ÷ peer | target |" for _, _, _, o, p in pairs)
    head += " in-memory peer |"
    lines = [
        "Server and store CPU ms per operation (median of the runs), ours against node oidc-provider on the same "
        "kind of store; each store is private and inside its server's process tree, so its CPU is counted.",
        "",
        head,
        "|---|" + "---:|---:|---:|---|" * len(pairs) + "---:|",
    ]
    groups = list(PERSISTENT_TARGETS) + [g for _, _, peer, _, _ in pairs for g in peer if g not in PERSISTENT_TARGETS]
    for group in dict.fromkeys(groups):
        cells = []
        for label, ours, peer, _, _ in pairs:
            o, p = ours.get(_our_group(label, group)), peer.get(group)
            cpu, pcpu = (o or {}).get("server_cpu_ms_per_op"), (p or {}).get("server_cpu_ms_per_op")
            ratio = _ratio(cpu, pcpu)
            target = PERSISTENT_TARGETS.get(group)
            verdict = (
                ""
                if target is None
                else f"≤ {target:.1f}×" + ("" if ratio is None else (" ✔" if ratio <= target else " ✘"))
            )
            cells.append(f" {_spread(cpu)} | {_spread(pcpu)} | {_x(ratio)} | {verdict} |")
        m = memory_peer.get(group)
        lines.append(f"| {group} |" + "".join(cells) + f" {_spread(m['server_cpu_ms_per_op']) if m else ''} |")
    return [*lines, "", *_paired_table(files), *_postgresql_cost_table(files)]


def _paired_table(files: dict) -> list[str]:
    """Each repeat of ours divided by the peer's repeat that ran next to it. A machine whose speed
    drifts during the session (a shared VM's did by half in one session) moves both figures of a
    pair together, so the median of the pairs reads that drift less than the ratio of the two
    medians. Shown beside that ratio; the targets are still judged on it. Empty without repeats."""
    columns = []
    for ours, peer, ours_store, peer_store in PERSISTENT_PAIRS:
        o, p = _groups(files.get(ours)), _groups(files.get(peer))
        if o and p:
            columns.append((ours, o, p, f"ours on {ours_store} ÷ peer on {peer_store}, repeat by repeat"))
    rows = []
    for group in PERSISTENT_TARGETS:
        cells = []
        for label, o, p, _ in columns:
            mine = (o.get(_our_group(label, group)) or {}).get("server_cpu_ms_per_op")
            theirs = (p.get(group) or {}).get("server_cpu_ms_per_op")
            pairs = list(zip((mine or {}).get("runs", []), (theirs or {}).get("runs", []), strict=False))
            ratios = sorted(a / b for a, b in pairs if b)
            cells.append(
                f" {statistics.median(ratios):.2f}× ({ratios[0]:.2f}–{ratios[-1]:.2f}) |" if len(ratios) > 1 else " |"
            )
        if any(cell != " |" for cell in cells):
            rows.append(f"| {group} |" + "".join(cells))
    if not rows:
        return []
    return [
        "The same, repeat by repeat: the median (and range) of each repeat of ours ÷ the peer's repeat run "
        "next to it, which a drift in the machine's speed moves less than the ratio of medians.",
        "",
        "| test |" + "".join(f" {title} |" for *_, title in columns),
        "|---|" + "---:|" * len(columns),
        *rows,
        "",
    ]


def _cpu(groups: dict, group: str) -> float | None:
    g = groups.get(group)
    return g["server_cpu_ms_per_op"]["median"] if g and g.get("server_cpu_ms_per_op") else None


def _postgresql_cost_table(files: dict) -> list[str]:
    """Each side's PostgreSQL ratio split in two: what PostgreSQL adds to an operation (ours over our
    SQLite, the peer over its memory) and the ratio without a database server (ours on SQLite ÷
    the in-memory peer). Our SQLite figure still holds SQLite's own work: the first column
    understates what PostgreSQL adds to ours by that much, and the last overstates our ratio by as
    much. Medians; empty without all four runs."""
    ours, ours_pg = _groups(files.get("ours")), _groups(files.get("ours-postgresql"))
    peer, peer_pg = _groups(files.get("peer")), _groups(files.get("peer-pg"))
    if not (ours and ours_pg and peer and peer_pg):
        return []
    lines = [
        "What PostgreSQL adds to each side, server and store CPU ms per operation (medians): ours on PostgreSQL "
        "minus ours on SQLite, the PostgreSQL peer minus the in-memory peer; and ours on SQLite ÷ the in-memory "
        "peer, the ratio without a database server.",
        "",
        "| test | ours: PostgreSQL − SQLite | peer: PostgreSQL − memory | ours on SQLite ÷ in-memory peer |",
        "|---|---:|---:|---:|",
    ]
    for group in PERSISTENT_TARGETS:
        o, opg = _cpu(ours, group), _cpu(ours_pg, f"{group} [PostgreSQL]")
        p, ppg = _cpu(peer, group), _cpu(peer_pg, group)
        if o is None or opg is None or p is None or ppg is None:
            continue
        lines.append(f"| {group} | {opg - o:,.3f} | {ppg - p:,.3f} | {o / p:.2f}× |")
    return [*lines, ""]


def render_report(files: dict, machine: dict, a) -> str:
    # each of our rows, followed by its variants (real password-hash cost, PostgreSQL)
    variants = [_groups(files.get("ours-real-hash")), _groups(files.get("ours-postgresql"))]
    ours = {}
    for group, g in _groups(files.get("ours")).items():
        ours[group] = g
        for variant in variants:
            for vgroup, vg in variant.items():
                if vgroup.replace(" (real argon2id)", "").replace(" [PostgreSQL]", "") == group:
                    ours[vgroup] = vg
    peer = _groups(files.get("peer"))
    stack_floor = _groups(files.get("stack-floor"))
    lines = [
        f"Machine: {machine['cpu']}, {machine['cores']} cores; Python {machine['python']}, node {machine['node']}; "
        f"load average before {machine['load_before'][0]:.2f}, after {machine['load_after'][0]:.2f}.",
        f"Profile `{a.profile}`, dataset scale {a.scale}, {a.server} {a.workers} workers x {a.threads} threads; "
        f"the stack floor 1 worker x {a.threads} threads (its state is its memory).",
        "",
        *_persistent_table(files),
        "Against the in-memory peer and the stack floor:",
        "",
        f"Stack floor: the peer's work done by Flask + Authlib under {a.server} alone, in memory, with nothing of "
        "Credits ID (bench/floor_provider.py). Floor ÷ peer above a target means this setup misses it before the "
        "provider adds anything; read it with the run-to-run spread.",
        "",
        "| test | ours req/s | ours p50 ms | ours p99 ms | ours CPU ms/op (min–max) | stack floor CPU ms/op | "
        "peer CPU ms/op | ours ÷ peer | floor ÷ peer | ours ÷ floor | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    # Our rows first; then what only the floor or the peer ran (a run with `--targets peer,stack-floor`).
    rows = list(ours) + [x for x in stack_floor if x not in ours]
    rows += [x for x in peer if x not in rows]
    for group in rows:
        if group.startswith("hello"):
            continue
        g = ours.get(group)
        base = group.replace(" (real argon2id)", "").replace(" [PostgreSQL]", "")
        p, f = peer.get(base), stack_floor.get(group)  # the floor has SQLite-like rows only: no database
        cpu = g["server_cpu_ms_per_op"] if g else None
        pcpu = p["server_cpu_ms_per_op"] if p else None
        fcpu = f["server_cpu_ms_per_op"] if f else None
        ratio = _ratio(cpu, pcpu)
        target = TARGETS.get(_kind(base))
        target_s = ""
        if target is not None and "real argon2id" not in group:
            target_s = f"≤ {target:.1f}×" + ("" if ratio is None else (" ✔" if ratio <= target else " ✘"))
        p99_target = P99_TARGETS.get(base.split(" ")[0])
        if p99_target is not None and g and g["p99_ms"]:
            target_s = f"p99 < {p99_target:g} ms" + (" ✔" if g["p99_ms"]["max"] < p99_target else " ✘")
        ours_cells = (
            f"{_m(g['rps'], 0)} | {_m(g['p50_ms'], 2)} | {_m(g['p99_ms'], 2)} | {_spread(cpu)}" if g else " | | | "
        )
        lines.append(
            f"| {group} | {ours_cells} | {_spread(fcpu) if f else ''} | {_spread(pcpu) if p else ''} | "
            f"{_x(ratio)} | {_x(_ratio(fcpu, pcpu))} | {_x(_ratio(cpu, fcpu))} | {target_s} |"
        )
    hello = {g.split(" ")[1]: v for g, v in ours.items() if g.startswith("hello")}
    if hello:
        lines += [
            "",
            'The floor: discovery and the key set against a Flask "hello" JSON endpoint (same run, same '
            "server settings).",
            "",
            "| test | req/s | p50 ms | p99 ms | CPU ms/op (min–max) | ÷ hello (CPU) | target |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for group, g in ours.items():
            name, _, conc = group.partition(" ")
            if name not in ("discovery", "jwks", "hello") or conc not in hello:
                continue
            h = hello[conc]["server_cpu_ms_per_op"]
            cpu = g["server_cpu_ms_per_op"]
            ratio = cpu["median"] / h["median"] if cpu and h else None
            target_s = (
                ""
                if name == "hello"
                else f"≤ {FLOOR_TARGET}×" + ("" if ratio is None else (" ✔" if ratio <= FLOOR_TARGET else " ✘"))
            )
            lines.append(
                f"| {group} | {_m(g['rps'], 0)} | {_m(g['p50_ms'], 2)} | {_m(g['p99_ms'], 2)} | "
                f"{_spread(cpu)} | {'' if ratio is None else f'{ratio:.2f}×'} | {target_s} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--harness",
        default=os.environ.get("BENCH_HARNESS", str(DEFAULT_HARNESS)),
        help="folder of the shared harness (oidcperf.py, run-peer.sh, make_tables.py)",
    )
    ap.add_argument("--profile", choices=sorted(PROFILES), default="standard")
    ap.add_argument("--repeat", type=int, default=0, help="runs per test (default: the profile's)")
    ap.add_argument("--tests", default="discovery,jwks,hello,roundtrip,token,refresh,userinfo,sso,extra")
    ap.add_argument(
        "--targets",
        default="ours,peer-redis,peer-pg,peer,stack-floor",
        help="ours, peer-redis and peer-pg (node oidc-provider on Redis / PostgreSQL, each with a private "
        "store counted in its CPU), peer (in memory), stack-floor (Flask + Authlib in memory)",
    )
    ap.add_argument(
        "--database",
        default="sqlite,postgresql",
        help="sqlite and/or postgresql (a private cluster, counted in our CPU)",
    )
    ap.add_argument("--scale", type=int, default=1, help="dataset size: 1 = 100 apps, 1k members, 10k tokens")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="per worker (default: production's, serve.py)")
    ap.add_argument("--catalog-credits", type=int, default=CATALOG_CREDITS, help="demo catalog size for the /v1 reads")
    ap.add_argument(
        "--server",
        choices=SERVERS,
        default="granian",
        help="the HTTP server of every Python provider: granian (production's) or gunicorn (the one before)",
    )
    ap.add_argument("--no-real-hash", action="store_true", help="skip the round trip with the real argon2id cost")
    ap.add_argument("--no-wrk", action="store_true", help="the built-in client for GET tests too")
    ap.add_argument(
        "--peer-work", default=os.environ.get("PEER_WORK", str(Path(tempfile.gettempdir()) / "credits-bench-peer"))
    )
    ap.add_argument("--out-dir", default=str(ROOT / "artifacts" / time.strftime("bench-%Y%m%d-%H%M%S")))
    ap.add_argument("--keep", action="store_true", help="keep the temporary dataset and server logs")
    a = ap.parse_args(argv)
    sys.exit(Bench(a).run())


if __name__ == "__main__":
    main()
