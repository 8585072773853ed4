"""Test set-up: one database (SQLite by default, PostgreSQL with TEST_DATABASE_URL) built by the
migrations, an app for direct checks of the database, and a real server process (granian, started
by serve.py as in production) that the integration tests talk to over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from sqlalchemy import MetaData, inspect, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402
from app.core.extensions import db  # noqa: E402
from app.protocol.jwks import keystore  # noqa: E402

KEEP_TABLES = {"alembic_version", "signing_keys"}
# Apps of the test process (the test client's): they start no thread that writes keys' recent
# requests behind the tests' backs; entries wait until a test writes them (`recorder().flush()`).
# The servers the tests start write them as production does.
IN_PROCESS = {"KEY_ACTIVITY_FLUSH_SECONDS": 0}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str, tests: str) -> None:
    """A tool or service a group of tests needs is missing: skip with the reason on a developer's
    machine; fail in CI, where it must exist (.ci/run provides it), so CI never passes silently
    without running `tests`."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: {tests} must run, so this is a failure)", pytrace=False)
    pytest.skip(reason)


def redis_test_url(default_db: int) -> str:
    """The Redis database a group of tests uses: `default_db`, or TEST_REDIS_DB when set, so that
    several runs on one machine (each with its own TEST_REDIS_DB) never flush each other's keys."""
    return f"redis://127.0.0.1:6379/{os.environ.get('TEST_REDIS_DB') or default_db}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def smtp_server():
    """A real SMTP server on loopback (aiosmtpd) that every server the tests start sends to."""
    from tests.mailbox import start_smtp_server

    port = free_port()
    controller, mailbox = start_smtp_server(port)
    mailbox.port = port
    yield mailbox
    controller.stop()


@pytest.fixture
def mailbox(smtp_server):
    """The mails received during this test (and a clean box for it)."""
    smtp_server.messages.clear()
    return smtp_server


@pytest.fixture(scope="session")
def settings(tmp_path_factory, smtp_server) -> dict:
    """Settings shared by the test process and the server process it starts."""
    base = tmp_path_factory.mktemp("credits-id")
    port = free_port()
    return {
        "SMTP_URL": f"smtp://127.0.0.1:{smtp_server.port}",
        "MAIL_FROM": "Credits ID <no-reply@id.test>",
        "APP_ENV": "development",
        "ISSUER_URL": f"http://127.0.0.1:{port}",
        "DATABASE_URL": os.environ.get("TEST_DATABASE_URL") or f"sqlite:///{base / 'test.sqlite3'}",
        # The catalog's reads on a database of their own (app/store/catalog_database.py), for a run
        # that points it at the test database itself: every catalog test then reads through it.
        "CATALOG_DATABASE_URL": os.environ.get("TEST_CATALOG_DATABASE_URL", ""),
        "KEYS_DIR": str(base / "keys"),
        "SECRET_KEY": "test-secret-key-" + "0123456789abcdef" * 2,
        # Cheap password hashing in tests; the real cost is measured by the benchmarks.
        "ARGON2_TIME_COST": 1,
        "ARGON2_MEMORY_COST": 1024,
        "KEY_REFRESH_INTERVAL": 0,
        # Every test's browser is 127.0.0.1: the suite asks for more reset and verification mails
        # in an hour than one address may (its own tests set the limit they check).
        "MAIL_IP_LIMIT": "1000 per hour",
        "_PORT": port,
    }


def _reset_schema(engine) -> None:
    """Drop everything (a previous run on the same PostgreSQL database), then migrate."""
    meta = MetaData()
    meta.reflect(bind=engine)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            for table in inspect(engine).get_table_names():
                conn.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    else:
        meta.drop_all(bind=engine)


@pytest.fixture(scope="session")
def app(settings):
    from flask_migrate import upgrade

    app = create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, **IN_PROCESS})
    with app.app_context():
        _reset_schema(db.engine)
        upgrade()
        keystore.ensure_key()
        db.session.commit()
    return app


@pytest.fixture(autouse=True)
def app_context(request, app):
    """Every test runs inside an app context and leaves the tables empty (keys are kept)."""
    with app.app_context():
        yield
        db.session.rollback()
        db.session.remove()
        with db.engine.begin() as conn:
            for table in reversed(db.metadata.sorted_tables):
                if table.name not in KEEP_TABLES:
                    conn.execute(table.delete())
        db.session.remove()


NOTICE_DELIVERED = 0.3  # seconds: far more than PostgreSQL takes to pass a notice on, on one machine


def heard_elsewhere() -> None:
    """Give another process time to hear of a change the test has committed: on PostgreSQL a server
    keeps the apps and API keys it has read until PostgreSQL delivers the change's notice
    (app/store/row_cache.py) - usually before the writer's COMMIT returns, always well within this."""
    if db.engine.dialect.name == "postgresql":
        time.sleep(NOTICE_DELIVERED)


@pytest.fixture
def client(app):
    """A test client of the test app: each of its requests runs in an app context of its own."""
    return app.test_client()


@pytest.fixture
def fresh_budgets():
    """Rate-limit counts from nothing, and none left behind: the address and key budgets live as
    long as the test process (a module that counts requests marks itself
    `pytest.mark.usefixtures("fresh_budgets")`)."""
    from app.core.extensions import limiter

    limiter.reset()
    yield
    limiter.reset()


def server_env(settings: dict, **extra: str) -> dict:
    """A server's environment: the settings, and no tool server unless a test asks for one with
    MCP_BIND (serve.py would start it at 127.0.0.1:8001, which parallel runs would share)."""
    env = {k: str(v) for k, v in settings.items() if not k.startswith("_")}
    return {**os.environ, **env, "PYTHONPATH": str(ROOT), "MCP_BIND": "off", **extra}


def start_server(settings: dict, port: int, log_path: Path, **extra_env: str) -> subprocess.Popen:
    """The app served as in production (`python serve.py`: granian), one worker of 8 threads;
    waits until it answers."""
    env = server_env(
        settings,
        ISSUER_URL=settings["ISSUER_URL"],
        WEB_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="1",
        WEB_THREADS="8",
        **extra_env,
    )
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "serve.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {log_path}")
        try:
            requests.get(f"http://127.0.0.1:{port}/.well-known/openid-configuration", timeout=10)
            return proc
        except requests.RequestException:  # not listening yet, or slow on a loaded machine
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server did not start; see {log_path}")


@pytest.fixture(scope="session")
def live_server(app, settings, tmp_path_factory):
    """The provider, served by granian at ISSUER_URL, over the test database."""
    log_path = tmp_path_factory.mktemp("logs") / "server.log"
    proc = start_server(settings, settings["_PORT"], log_path)
    yield LiveServer(settings["ISSUER_URL"], log_path)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


class LiveServer:
    def __init__(self, url: str, log_path: Path):
        self.url = url
        self.log_path = log_path

    def __call__(self, path: str) -> str:
        return self.url + path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")
