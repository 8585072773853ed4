"""What each layer under a request costs on this machine: the floor the endpoints stand on.

    python -m bench.layers [--number 1000] [--repeat 5]

`make bench` says how fast the provider is beside node oidc-provider; this says why. It times, in
CPU microseconds per call (the best of `--repeat` batches, in this process, no HTTP server):

- the crypto every exchange pays (the RS256 signature of an ID token, a token's SHA-256);
- one indexed token lookup at each level of the database stack, from the sqlite3 driver up to the
  ORM query the provider runs, and a request's session begin-and-close;
- Flask answering "hello", and the provider answering /healthz: the gap between the two is what the
  provider's per-request hooks cost (request id, CSRF, the JSON access line, metrics, headers);
- whole requests called as WSGI applications (discovery, userinfo, the code + PKCE exchange), so
  their sum can be read against the parts.

The dataset is bench/dataset.py's (SQLite in a temporary folder, the cheap bench-only hasher). The
access lines are formatted and written as in production, to /dev/null.
The HTTP server's own cost per request comes on top: `make bench` measures it (the "hello" rows).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.profile import TOKEN, Driver, build  # noqa: E402


def cpu_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    """Best CPU time of `repeat` batches of `number` calls, in microseconds per call."""
    timer = timeit.Timer(fn, timer=time.process_time)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


class WSGICall:
    """One request to a WSGI app, environ built once, body replayed: the app's own cost."""

    def __init__(self, app, path: str, *, method: str = "GET", headers: dict | None = None, form: dict | None = None):
        from werkzeug.test import EnvironBuilder

        self.app = app
        self.body = urlencode(form).encode() if form else b""
        builder = EnvironBuilder(
            path=path,
            method=method,
            headers=headers or {},
            data=self.body or None,
            content_type="application/x-www-form-urlencoded" if form else None,
            base_url="http://127.0.0.1:9",
        )
        self.environ = builder.get_environ()
        self.status = ""

    def __call__(self) -> bytes:
        environ = dict(self.environ)
        environ["wsgi.input"] = io.BytesIO(self.body)

        def start_response(status, headers, exc_info=None):
            self.status = status

        return b"".join(self.app(environ, start_response))

    def check(self) -> None:
        self()
        if not self.status.startswith("200"):
            raise SystemExit(f"{self.environ['PATH_INFO']} answered {self.status}")


def crypto_rows(number: int, repeat: int) -> list[tuple[str, float]]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    from joserfc import jwt
    from joserfc.jwk import RSAKey

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = RSAKey.import_key(private)
    now = int(time.time())
    claims = {
        "iss": "http://127.0.0.1:9",
        "sub": "x" * 22,
        "aud": "app",
        "iat": now,
        "exp": now + 300,
        "auth_time": now,
        "nonce": "n",
        "at_hash": "a" * 22,
    }
    payload = b"x" * 400
    return [
        (
            "RS256 signature, 2048-bit key (cryptography)",
            cpu_us(lambda: private.sign(payload, padding.PKCS1v15(), hashes.SHA256()), number, repeat),
        ),
        (
            "ID token: header, claims, RS256 (joserfc, as the provider signs)",
            cpu_us(lambda: jwt.encode({"alg": "RS256", "kid": "k", "typ": "JWT"}, claims, key), number, repeat),
        ),
        ("SHA-256 of a 43-character token", cpu_us(lambda: hashlib.sha256(b"t" * 43).hexdigest(), number * 20, repeat)),
    ]


def database_rows(app, access_token: str, client_id: str, number: int, repeat: int) -> list[tuple[str, float]]:
    from sqlalchemy import bindparam, select
    from sqlalchemy.orm import Session

    from app.core.extensions import db
    from app.models import Client, Token
    from app.models.base import sha256_hex
    from app.store.apps import _APP_BY_CLIENT_ID as _BY_CLIENT_ID
    from app.store.tokens import _BY_ACCESS_HASH

    # The ORM statements the protocol store replaced, measured beside the store's Core ones.
    orm_token = select(Token).where(Token.access_token_hash == bindparam("hash"))
    orm_client = select(Client).where(Client.client_id == bindparam("client_id"))

    digest = sha256_hex(access_token)
    tokens = Token.__table__
    core = select(tokens).where(tokens.c.access_token_hash == bindparam("hash"))
    with app.app_context():
        engine = db.engine
        raw = engine.raw_connection()
        connection = engine.connect()

        def driver():
            cursor = raw.cursor()
            cursor.execute("SELECT * FROM tokens WHERE access_token_hash = ?", (digest,))
            cursor.fetchone()

        def session_cycle():
            with Session(engine) as session:
                session.connection()

        def bearer():
            with Session(engine) as session:
                session.connection().execute(_BY_ACCESS_HASH, {"hash": digest}).first()

        def core_client():
            with Session(engine) as session:
                session.connection().execute(_BY_CLIENT_ID, {"client_id": client_id}).first()

        def orm(statement, params):
            def run():
                with Session(engine) as session:
                    session.scalar(statement, params)

            return run

        rows = [
            ("sqlite3 driver: the token row by its indexed hash", cpu_us(driver, number, repeat)),
            (
                "SQLAlchemy Core: the same row, on an open connection",
                cpu_us(lambda: connection.execute(core, {"hash": digest}).first(), number, repeat),
            ),
            (
                "SQLAlchemy Session: begin, take a connection, close (once per request)",
                cpu_us(session_cycle, number, repeat),
            ),
            (
                "ORM in a fresh session: the token with its app and member (before the protocol store)",
                cpu_us(orm(orm_token, {"hash": digest}), number, repeat),
            ),
            (
                "Core in a fresh session: the same, as plain values (the store's find_bearer: userinfo, /v1)",
                cpu_us(bearer, number, repeat),
            ),
            (
                "ORM in a fresh session: the app by its client_id (before the protocol store)",
                cpu_us(orm(orm_client, {"client_id": client_id}), number, repeat),
            ),
            (
                "Core in a fresh session: the app by its client_id (the store: token, authorize)",
                cpu_us(core_client, number, repeat),
            ),
        ]
        connection.close()
        raw.close()
    return rows


def request_rows(app, driver: Driver, data: dict, number: int, repeat: int) -> list[tuple[str, float]]:
    from bench.hello import app as hello

    tokens = driver.exchange(*driver.sso())
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    calls = {
        "hello": WSGICall(hello, "/hello"),
        "healthz": WSGICall(app, "/healthz"),
        "discovery": WSGICall(app, "/.well-known/openid-configuration"),
        "userinfo": WSGICall(app, "/api/auth/oauth2/userinfo", headers=bearer),
    }
    for call in calls.values():
        call.check()
    rows = [
        ('Flask "hello" (bench/hello.py)', cpu_us(calls["hello"], number, repeat)),
        ("the provider's /healthz: Flask plus every per-request hook", cpu_us(calls["healthz"], number, repeat)),
        ("discovery (prepared bytes, answered before Flask)", cpu_us(calls["discovery"], number, repeat)),
        ("userinfo (one Core lookup, the claims)", cpu_us(calls["userinfo"], number, repeat)),
    ]
    # Each exchange spends its code, so each batch gets fresh ones (minted untimed).
    creds = base64.b64encode(f"{data['client_id']}:{data['client_secret']}".encode()).decode()
    batch = max(number // 10, 20)
    best = float("inf")
    for _ in range(repeat):
        exchanges = [
            WSGICall(
                app,
                TOKEN,
                method="POST",
                headers={"Authorization": "Basic " + creds},
                form={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": data["redirect_uri"],
                    "code_verifier": verifier,
                },
            )
            for code, verifier in (driver.sso() for _ in range(batch))
        ]
        started = time.process_time()
        for call in exchanges:
            call()
        best = min(best, (time.process_time() - started) / batch * 1e6)
        if not exchanges[-1].status.startswith("200"):
            raise SystemExit(f"the token endpoint answered {exchanges[-1].status}")
    rows.append(("code + PKCE exchange (4 statements, one RS256 ID token)", best))
    return rows


def quiet_logs() -> None:
    """The access lines are still formatted and written, as in production, but to /dev/null
    instead of this terminal. Only the app's own handler: another one (pytest's capture, say) keeps
    its stream."""
    import os

    from app.core.logs import app_handler

    handler = app_handler()
    if handler is not None:
        handler.setStream(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--number", type=int, default=1000, help="calls per batch")
    ap.add_argument("--repeat", type=int, default=5, help="batches; the best one counts")
    ap.add_argument("--scale", type=int, default=1, help="filler rows, as in `make bench`")
    a = ap.parse_args(argv)

    app, data = build(a.scale)
    quiet_logs()
    driver = Driver(app, data)
    driver.roundtrip()  # a session and a remembered consent, so sso() mints codes
    access_token = driver.exchange(*driver.sso())["access_token"]
    from app.core.serving import settle_for_serving

    settle_for_serving()  # as wsgi.py does: no collector walks of the start-up heap inside a batch

    sections = [
        ("Crypto", crypto_rows(a.number, a.repeat)),
        ("Database (SQLite)", database_rows(app, access_token, data["client_id"], a.number, a.repeat)),
        ("Whole requests, called as WSGI apps", request_rows(app, driver, data, a.number, a.repeat)),
    ]
    print("| layer | CPU µs per call |\n|---|---:|")
    for title, rows in sections:
        print(f"| **{title}** | |")
        for label, micros in rows:
            print(f"| {label} | {micros:,.1f} |")


if __name__ == "__main__":
    main()
