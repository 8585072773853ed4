"""A real database outage and recovery, on PostgreSQL: a server (serve.py) reaches the database
through a TCP relay the test controls. The relay is cut (every connection dropped, the port
refusing new ones) and restored; the machine's PostgreSQL itself is never stopped (other
suites use it). During the outage every surface answers a clear 503; afterwards the same
processes serve again without a restart, and nothing was half-issued."""

from __future__ import annotations

import time

import pytest
import requests
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from app.core.extensions import db
from app.models import AuthorizationCode, Token
from tests.factories import PASSWORD, REDIRECT_URI, make_client, make_member
from tests.flows import AUTHORIZE, USERINFO, Browser, RelyingParty, csrf_token, hidden, sign_in
from tests.production.servers import TEST_DATABASE_URL, TcpProxy, requires_postgres, running

pytestmark = requires_postgres


@pytest.fixture
def relay():
    url = make_url(TEST_DATABASE_URL)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.start()
    yield proxy
    proxy.close()


def wait_until_ready(server, timeout: float = 60) -> requests.Response:
    deadline = time.monotonic() + timeout
    while True:
        response = requests.get(server("/readyz"), timeout=30)
        if response.status_code == 200 or time.monotonic() > deadline:
            return response
        time.sleep(0.5)


def test_database_outage_and_recovery(app, settings, relay, tmp_path):
    through_relay = make_url(TEST_DATABASE_URL).set(host="127.0.0.1", port=relay.port)
    member = make_member()
    client, secret = make_client()
    with running(
        settings,
        tmp_path,
        workers=2,
        threads=4,
        DATABASE_URL=through_relay.render_as_string(hide_password=False),
        DATABASE_CONNECT_TIMEOUT="3",
        DATABASE_POOL_TIMEOUT="5",
    ) as server:
        rp = RelyingParty(server.url, client.client_id, secret)
        assert requests.get(server("/readyz"), timeout=30).status_code == 200

        # Before: one pair in hand, one code not yet redeemed, one browser on the login page.
        params, _ = sign_in(server.url, rp, member.email, scope="openid profile offline_access")
        first = rp.exchange(params["code"])
        assert first.status_code == 200, first.text
        access_token = first.json()["access_token"]
        params, _ = sign_in(server.url, rp, member.email, scope="openid profile offline_access")
        pending_code, pending_verifier = params["code"], rp.verifier
        other = Browser(server.url)
        login_page = other.authorize(rp.auth_params(scope="openid profile offline_access"))
        assert 'type="password"' in login_page.text

        relay.cut()

        assert requests.get(server("/healthz"), timeout=30).json() == {"status": "ok"}
        ready = requests.get(server("/readyz"), timeout=30)
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"] == {"ok": False, "error": "unavailable"}

        token = rp.exchange(pending_code, verifier=pending_verifier)
        assert token.status_code == 503
        assert token.json()["error"] == "temporarily_unavailable"
        assert token.headers["Retry-After"] and token.headers["Cache-Control"] == "no-store"

        info = requests.get(server(USERINFO), headers={"Authorization": f"Bearer {access_token}"}, timeout=30)
        assert info.status_code == 503 and info.json()["error"] == "temporarily_unavailable"

        login_form = {
            "csrf_token": csrf_token(login_page.text),
            "email": member.email,
            "password": PASSWORD,
            "interaction": hidden(login_page.text, "interaction"),
        }
        login = other.post("/login", data=login_form, headers={"X-Request-Id": "outage-login"})
        assert login.status_code == 503
        assert login.headers["Content-Type"].startswith("text/html")
        assert "temporarily unavailable" in login.text and "reference outage-login" in login.text

        page = requests.get(server(AUTHORIZE), params=rp.auth_params(), timeout=30)
        assert page.status_code == 503 and "Temporarily unavailable" in page.text

        # Nothing was written by the refused requests: the code is still unused, no new pair.
        db.session.expire_all()
        code_row = db.session.scalar(select(AuthorizationCode).where(AuthorizationCode.used_at.is_(None)))
        assert code_row is not None
        assert db.session.scalar(select(func.count()).select_from(Token)) == 1

        relay.restore()

        # The same processes recover on their own.
        ready = wait_until_ready(server)
        assert ready.status_code == 200, ready.text
        token = rp.exchange(pending_code, verifier=pending_verifier)
        assert token.status_code == 200, token.text
        info = requests.get(server(USERINFO), headers={"Authorization": f"Bearer {access_token}"}, timeout=30)
        assert info.status_code == 200 and info.json()["sub"]
        # The member presses "Sign in" again on the page they had: the parked request resumes.
        resumed = other.follow(other.post("/login", data=login_form))
        assert resumed.status_code == 302 and resumed.headers["Location"].startswith(REDIRECT_URI)
        assert "code=" in resumed.headers["Location"]

        db.session.expire_all()
        assert db.session.scalar(select(func.count()).select_from(Token)) == 2
        assert db.session.scalar(select(func.count()).select_from(AuthorizationCode)) == 3
        assert server.proc.poll() is None
        log = server.log_text()
        assert log.count("Spawning worker") == 2 and "Unexpected exit" not in log, "a worker was restarted"
        lines = server.log_lines()
        assert any(
            line.get("request_id") == "outage-login" and "database unavailable" in line["message"] for line in lines
        )
