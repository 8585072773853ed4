"""Profile one operation in-process: where does a request's time go, and how many SQL queries
does it run?

    python -m bench.profile --op token --n 300            # pyinstrument call tree, text
    python -m bench.profile --op all --n 200 --no-tree    # wall ms and queries per operation
    python -m bench.profile --op roundtrip --no-tree --by-request   # and CPU per HTTP request

    python -m bench.profile --op token --no-tree \
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/credits_profile

Operations: discovery, jwks, roundtrip, sso, token, refresh, userinfo. The app runs in this
process on a prepared dataset (bench/dataset.py, the cheap bench-only hasher; SQLite in a
temporary folder unless `--database-url` names a PostgreSQL database, which is emptied and
rebuilt), driven by Flask's test client, so the profile shows the provider's own code without
the HTTP server. On PostgreSQL the summary adds the database's own CPU per operation (its backends
serving this process, read from /proc) and the round trips. Use `make bench` for the figures that
count.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import sys
import tempfile
import time
from collections import Counter
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from psycopg.pq import TransactionStatus  # noqa: E402
from sqlalchemy import event  # noqa: E402

from bench.dataset import server_settings  # noqa: E402

AUTHORIZE = "/api/auth/oauth2/authorize"
TOKEN = "/api/auth/oauth2/token"
OPS = ("discovery", "jwks", "roundtrip", "sso", "token", "refresh", "userinfo")


def _hidden(html: str, name: str) -> str:
    m = re.search(rf'name="{name}"[^>]*value="([^"]*)"', html)
    return unescape(m.group(1)) if m else ""


class Driver:
    """A browser and a relying party over Flask's test client."""

    def __init__(self, app, data: dict):
        self.app, self.data = app, data
        self.browser = app.test_client()
        self.rp = app.test_client()
        creds = f"{data['client_id']}:{data['client_secret']}".encode()
        self.basic = {"Authorization": "Basic " + base64.b64encode(creds).decode()}

    def _authorize_url(self, scope: str, prompt: str | None) -> tuple[str, str]:
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        params = {
            "response_type": "code",
            "client_id": self.data["client_id"],
            "redirect_uri": self.data["redirect_uri"],
            "scope": scope,
            "state": "s",
            "nonce": "n",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if prompt:
            params["prompt"] = prompt
        return AUTHORIZE + "?" + "&".join(f"{k}={v.replace(' ', '%20')}" for k, v in params.items()), verifier

    def _follow(self, response):
        while response.status_code in (302, 303):
            location = response.headers["Location"]
            if location.startswith(self.data["redirect_uri"]):
                return location
            response = self.browser.get(location)
        return response

    def roundtrip(self, scope="openid profile email offline_access") -> tuple[str, str]:
        """Login page, login, consent page, consent: the code and its verifier."""
        self.browser._cookies.clear()
        url, verifier = self._authorize_url(scope, "consent")
        page = self._follow(self.browser.get(url))
        html = page.get_data(as_text=True)
        page = self._follow(
            self.browser.post(
                "/login",
                data={
                    "csrf_token": _hidden(html, "csrf_token"),
                    "interaction": _hidden(html, "interaction"),
                    "email": self.data["username"],
                    "password": self.data["password"],
                },
            )
        )
        html = page.get_data(as_text=True)
        location = self._follow(
            self.browser.post(
                "/consent",
                data={
                    "csrf_token": _hidden(html, "csrf_token"),
                    "interaction": _hidden(html, "interaction"),
                    "decision": "allow",
                    "scope": re.findall(r'name="scope" value="([^"]+)" checked', html),
                },
            )
        )
        return parse_qs(urlsplit(location).query)["code"][0], verifier

    def sso(self, scope="openid profile email offline_access") -> tuple[str, str]:
        url, verifier = self._authorize_url(scope, None)
        location = self._follow(self.browser.get(url))
        return parse_qs(urlsplit(location).query)["code"][0], verifier

    def exchange(self, code: str, verifier: str) -> dict:
        r = self.rp.post(
            TOKEN,
            headers=self.basic,
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.data["redirect_uri"],
                "code_verifier": verifier,
            },
        )
        assert r.status_code == 200, r.get_data(as_text=True)
        return r.get_json()

    def refresh(self, refresh_token: str) -> dict:
        r = self.rp.post(
            TOKEN, headers=self.basic, data={"grant_type": "refresh_token", "refresh_token": refresh_token}
        )
        assert r.status_code == 200, r.get_data(as_text=True)
        return r.get_json()

    def get(self, path: str, token: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = self.rp.get(path, headers=headers)
        assert r.status_code == 200, r.get_data(as_text=True)


def build(scale: int, database_url: str | None = None, dataset: str | None = None):
    """The app on a fresh dataset (no catalog: no operation here reads it), or on one built before
    (`dataset`: the JSON `python -m bench.dataset --json` printed) - ten million tokens take long
    to make, and the operations add only their own rows."""
    from bench.dataset import BENCH_LIMITS, CHEAP_ARGON2, prepare

    if dataset:
        data = json.loads(Path(dataset).read_text())
        url, keys = data["database_url"], data["keys_dir"]
    else:
        tmp = Path(tempfile.mkdtemp(prefix="credits-profile-"))
        url, keys = database_url or f"sqlite:///{tmp / 'profile.sqlite3'}", str(tmp / "keys")
        data = prepare(url, keys, scale, CHEAP_ARGON2, catalog_credits=0)
    from app import create_app

    app = create_app(server_settings(url, keys, **CHEAP_ARGON2, **BENCH_LIMITS))
    return app, data


def operation(d: Driver, op: str, n: int):
    """The work of `n` operations, and what must be prepared for it beforehand (untimed)."""
    if op in ("discovery", "jwks"):
        path = "/.well-known/openid-configuration" if op == "discovery" else "/api/auth/jwks"
        return lambda: [d.get(path) for _ in range(n)]
    if op == "roundtrip":
        return lambda: [d.roundtrip() for _ in range(n)]
    d.roundtrip()  # a session and a remembered consent
    if op == "sso":
        return lambda: [d.sso() for _ in range(n)]
    if op == "token":
        codes = [d.sso() for _ in range(n)]
        return lambda: [d.exchange(c, v) for c, v in codes]
    tokens = d.exchange(*d.sso())
    if op == "refresh":
        state = {"rt": tokens["refresh_token"]}

        def rotate():
            for _ in range(n):
                state["rt"] = d.refresh(state["rt"])["refresh_token"]

        return rotate
    if op == "userinfo":
        return lambda: [d.get("/api/auth/oauth2/userinfo", tokens["access_token"]) for _ in range(n)]
    raise SystemExit(f"unknown operation {op}")


class DatabaseCPU:
    """The CPU seconds the PostgreSQL backends serving this process have used (from /proc: the
    server runs on this machine), and the round trips this process has made to them; zero on SQLite."""

    def __init__(self, engine):
        self.engine, self.trips = engine, 0
        if engine.dialect.name == "postgresql":
            event.listen(engine, "before_cursor_execute", self._trip)
            for name in ("commit", "rollback"):
                event.listen(engine, name, self._transaction_trips)

    def _trip(self, *_args) -> None:
        self.trips += 1

    def _transaction_trips(self, conn) -> None:
        """A transaction open on the database as it ends: its BEGIN and its COMMIT or ROLLBACK."""
        if conn.connection.dbapi_connection.info.transaction_status != TransactionStatus.IDLE:
            self.trips += 2

    def ticks(self) -> dict[int, int]:
        """Each backend's CPU ticks so far, by pid (empty on SQLite)."""
        if self.engine.dialect.name != "postgresql":
            return {}
        import psycopg

        url = self.engine.url
        with psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.username, dbname=url.database, autocommit=True
        ) as conn:
            pids = [
                pid
                for (pid,) in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ]
        ticks = {}
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime
        return ticks

    def seconds_since(self, before: dict[int, int]) -> float:
        """The CPU seconds the backends alive now have used since `before` (a backend that has
        ended meanwhile, such as one the setup used, takes its ticks with it: per backend, or the
        sum could even fall)."""
        after = self.ticks()
        return sum(t - before.get(pid, 0) for pid, t in after.items()) / os.sysconf("SC_CLK_TCK")


class ByRequest:
    """The CPU this process spends in the app on each kind of HTTP request (method and path) of an
    operation, and the round trips each sends to PostgreSQL: which page of a sign-in costs what.
    Flask's test client itself is left out (it is not there behind an HTTP server)."""

    def __init__(self, app, database: DatabaseCPU):
        self.cpu: Counter[str] = Counter()
        self.count: Counter[str] = Counter()
        self.trips: Counter[str] = Counter()
        self.database, self.inner = database, app.wsgi_app
        app.wsgi_app = self

    def __call__(self, environ, start_response):
        trips, started = self.database.trips, time.process_time()
        try:
            return list(self.inner(environ, start_response))
        finally:
            kind = f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}"
            self.cpu[kind] += time.process_time() - started
            self.count[kind] += 1
            self.trips[kind] += self.database.trips - trips

    def clear(self) -> None:
        for counter in (self.cpu, self.count, self.trips):
            counter.clear()

    def lines(self, n: int) -> list[str]:
        """One line per kind of request, costliest first: CPU ms per request, requests per operation
        (and, on PostgreSQL, round trips per request)."""
        on_postgres = self.database.engine.dialect.name == "postgresql"
        lines = []
        for kind, seconds in self.cpu.most_common():
            count = self.count[kind]
            trips = f", {self.trips[kind] / count:.1f} round trips" if on_postgres else ""
            lines.append(f"  {seconds * 1000 / count:7.3f} ms CPU/request, {count / n:.1f}/op{trips}  {kind}")
        total = sum(self.cpu.values()) * 1000 / n
        lines.append(f"  {total:7.3f} ms CPU/op in the app (the rest is the test client)")
        return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="all", help=f"one of {', '.join(OPS)}, or all")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--no-tree", action="store_true", help="only the per-operation summary")
    ap.add_argument("--html", help="write pyinstrument's HTML report here (one operation)")
    ap.add_argument("--by-request", action="store_true", help="also the CPU of each HTTP request of an operation")
    ap.add_argument(
        "--database-url", help="a PostgreSQL database on this machine to build the dataset in (emptied first)"
    )
    ap.add_argument("--dataset", help="the JSON of a dataset built before by `python -m bench.dataset --json`")
    a = ap.parse_args(argv)
    app, data = build(a.scale, a.database_url, a.dataset)
    ops = OPS if a.op == "all" else tuple(a.op.split(","))
    with app.app_context():
        from app.core.extensions import db

        engine = db.engine
    queries = [0]
    event.listen(engine, "before_cursor_execute", lambda *args: queries.__setitem__(0, queries[0] + 1))
    database = DatabaseCPU(engine)
    by_request = ByRequest(app, database) if a.by_request else None
    for op in ops:
        d = Driver(app, data)
        work = operation(d, op, a.n)
        work_warm = operation(d, op, 5)
        work_warm()
        queries[0], database.trips = 0, 0
        if by_request is not None:
            by_request.clear()
        d0 = database.ticks()
        if a.no_tree:
            t0, c0 = time.perf_counter(), time.process_time()
            work()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        else:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005)
            t0, c0 = time.perf_counter(), time.process_time()
            with profiler:
                work()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if a.html:
                Path(a.html).write_text(profiler.output_html())
            else:
                print(profiler.output_text(unicode=True, color=False, show_all=False))
        db_cpu = database.seconds_since(d0)
        on_postgres = (
            f", database {db_cpu * 1000 / a.n:.3f} ms CPU/op, {database.trips / a.n:.1f} round trips/op"
            if engine.dialect.name == "postgresql"
            else ""
        )
        print(
            f"{op:10s} n={a.n}: {wall * 1000 / a.n:.3f} ms wall/op, {cpu * 1000 / a.n:.3f} ms CPU/op, "
            f"{queries[0] / a.n:.1f} SQL queries/op{on_postgres} (test client, in-process)",
            flush=True,
        )
        if by_request is not None:
            print("\n".join(by_request.lines(a.n)), flush=True)


if __name__ == "__main__":
    main()
