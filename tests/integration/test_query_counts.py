"""How many SQL statements the hot endpoints run, and that every lookup they make uses an index.

Counts, not timings (timings belong to `make bench`): a request that starts running an extra
query, or a lookup that loses its index, is a regression these tests catch on any machine.

The requests go through Flask's test client on a second app instance over the test database, so
every request gets its own application context (fresh `g`, fresh session), as under the production server.
Reads of `signing_keys` are left out of the counts: the key store re-reads that table at most every
KEY_REFRESH_INTERVAL seconds (10 by default; 0 in the tests, so that rotations show at once).
"""

from __future__ import annotations

import base64
import re
from contextlib import contextmanager
from urllib.parse import urlencode

import pytest
from sqlalchemy import event, text

from app import create_app
from app.core.extensions import db
from app.models import AuthorizationCode, Client, Token
from app.models.base import sha256_hex
from app.store.row_cache import EXTENSION as ROW_CACHE
from tests.conftest import heard_elsewhere
from tests.factories import PASSWORD, REDIRECT_URI, make_client, make_member
from tests.flows import csrf_token, hidden, pkce_pair, query

AUTHORIZE = "/api/auth/oauth2/authorize"
TOKEN = "/api/auth/oauth2/token"
USERINFO = "/api/auth/oauth2/userinfo"
SCOPE = "openid profile email offline_access"


@pytest.fixture(scope="module")
def counted_app(settings):
    return create_app({k: v for k, v in settings.items() if not k.startswith("_")})


def forget_kept_rows(app) -> None:
    """Drop the rows (apps, presented keys) `app`'s process keeps between requests (PostgreSQL only;
    none on SQLite)."""
    if (kept := app.extensions.get(ROW_CACHE)) is not None:
        kept.forget()


@contextmanager
def statements(app):
    """Collect the SQL statements `app` runs inside the block (signing_keys reads left out),
    starting with no app kept: on PostgreSQL a process keeps the apps it has read between requests
    (app/store/row_cache.py; tests/production/test_row_cache.py counts the kept case)."""
    with app.app_context():
        engine = db.engine
    forget_kept_rows(app)
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if "signing_keys" not in statement:
            seen.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def shape(sql: str) -> str:
    """`SELECT clients`, `UPDATE tokens`, `INSERT authorization_codes`: verb and main table (the
    statement's own, not a subquery's: parenthesised parts are set aside first)."""
    verb = sql.split()[0].upper()
    while (outer := re.sub(r"\([^()]*\)", "", sql)) != sql:
        sql = outer
    table = re.search(r"\b(?:FROM|UPDATE|INTO)\s+\"?(\w+)", sql, re.I).group(1)
    return f"{verb} {table}"


class Member:
    """A member's browser and an app, over the test client of `counted_app`."""

    def __init__(self, app):
        self.member = make_member(tier="pro")
        client, secret = make_client()
        self.client_id = client.client_id
        self.basic = {"Authorization": "Basic " + base64.b64encode(f"{client.client_id}:{secret}".encode()).decode()}
        self.browser = app.test_client()
        self.rp = app.test_client()

    def authorize_url(self, scope: str = SCOPE, **extra) -> tuple[str, str]:
        verifier, challenge = pkce_pair()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT_URI,
            "scope": scope,
            "state": "st",
            "nonce": "nn",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            **extra,
        }
        return AUTHORIZE + "?" + urlencode(params), verifier

    def follow(self, response):
        while response.status_code == 302 and not response.headers["Location"].startswith(REDIRECT_URI):
            response = self.browser.get(response.headers["Location"])
        return response

    def sign_in(self) -> tuple[str, str]:
        """Authorize, login page, consent page: the code and its PKCE verifier."""
        url, verifier = self.authorize_url(prompt="consent")
        page = self.follow(self.browser.get(url))
        html = page.get_data(as_text=True)
        assert 'type="password"' in html
        page = self.follow(
            self.browser.post(
                "/login",
                data={
                    "csrf_token": csrf_token(html),
                    "interaction": hidden(html, "interaction"),
                    "email": self.member.email,
                    "password": PASSWORD,
                },
            )
        )
        html = page.get_data(as_text=True)
        assert 'name="decision"' in html
        done = self.follow(
            self.browser.post(
                "/consent",
                data={
                    "csrf_token": csrf_token(html),
                    "interaction": hidden(html, "interaction"),
                    "decision": "allow",
                    "scope": re.findall(r'name="scope" value="([^"]+)" checked', html),
                },
            )
        )
        assert done.status_code == 302, done.get_data(as_text=True)
        return query(done.headers["Location"])["code"], verifier

    def exchange(self, code: str, verifier: str):
        return self.rp.post(
            TOKEN,
            headers=self.basic,
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT_URI,
                "code_verifier": verifier,
            },
        )

    def refresh(self, refresh_token: str):
        return self.rp.post(
            TOKEN, headers=self.basic, data={"grant_type": "refresh_token", "refresh_token": refresh_token}
        )


def test_token_exchange_reads_its_app_then_spends_the_code_and_stores_the_pair(counted_app):
    """On PostgreSQL one statement spends the code and stores the pair it buys; SQLite (no UPDATE
    inside WITH) takes two."""
    m = Member(counted_app)
    code, verifier = m.sign_in()
    with statements(counted_app) as seen:
        response = m.exchange(code, verifier)
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert {"access_token", "id_token", "refresh_token"} <= body.keys()
    # The code is found and spent by one UPDATE ... RETURNING, inside WITH on PostgreSQL.
    spend = (
        ["WITH spent"] if db.engine.dialect.name == "postgresql" else ["UPDATE authorization_codes", "INSERT tokens"]
    )
    assert [shape(s) for s in seen] == ["SELECT clients", *spend]
    # What those statements wrote: the code is spent, the pair is stored as hashes only.
    db.session.remove()
    row = db.session.scalar(db.select(AuthorizationCode).where(AuthorizationCode.code_hash == sha256_hex(code)))
    assert row.used_at is not None
    token = db.session.scalar(db.select(Token).where(Token.access_token_hash == sha256_hex(body["access_token"])))
    assert token.refresh_token_hash == sha256_hex(body["refresh_token"])
    assert token.grant_id == row.grant_id and token.user_id == m.member.id


def test_replayed_code_is_refused_and_revokes_what_it_issued(counted_app):
    m = Member(counted_app)
    code, verifier = m.sign_in()
    first = m.exchange(code, verifier).get_json()
    again = m.exchange(code, verifier)
    assert again.status_code == 400
    assert again.get_json()["error"] == "invalid_grant"
    db.session.remove()
    token = db.session.scalar(db.select(Token).where(Token.access_token_hash == sha256_hex(first["access_token"])))
    assert token.revoked_at is not None
    assert m.rp.get(USERINFO, headers={"Authorization": f"Bearer {first['access_token']}"}).status_code == 401


def test_refresh_reads_its_app_then_rotates_in_one_step(counted_app):
    """On PostgreSQL one statement spends the old refresh token and stores its successor; SQLite
    (no UPDATE inside WITH) takes two."""
    m = Member(counted_app)
    first = m.exchange(*m.sign_in()).get_json()
    with statements(counted_app) as seen:
        response = m.refresh(first["refresh_token"])
    assert response.status_code == 200, response.get_data(as_text=True)
    second = response.get_json()
    assert second["refresh_token"] != first["refresh_token"]
    rotation = ["WITH spent"] if db.engine.dialect.name == "postgresql" else ["UPDATE tokens", "INSERT tokens"]
    assert [shape(s) for s in seen] == ["SELECT clients", *rotation]
    db.session.remove()
    old = db.session.scalar(db.select(Token).where(Token.refresh_token_hash == sha256_hex(first["refresh_token"])))
    new = db.session.scalar(db.select(Token).where(Token.refresh_token_hash == sha256_hex(second["refresh_token"])))
    assert old.refresh_used_at is not None and new.refresh_used_at is None
    assert new.grant_id == old.grant_id and new.auth_time == old.auth_time


def test_reused_refresh_token_is_refused_and_revokes_the_family(counted_app):
    m = Member(counted_app)
    first = m.exchange(*m.sign_in()).get_json()
    second = m.refresh(first["refresh_token"]).get_json()
    reuse = m.refresh(first["refresh_token"])
    assert reuse.status_code == 400
    assert reuse.get_json()["error"] == "invalid_grant"
    assert m.refresh(second["refresh_token"]).status_code == 400  # the whole family is revoked
    db.session.remove()
    family = db.session.scalars(db.select(Token).where(Token.user_id == m.member.id)).all()
    assert len(family) == 2 and all(t.revoked_at is not None for t in family)


def test_userinfo_runs_one_statement(counted_app):
    m = Member(counted_app)
    tokens = m.exchange(*m.sign_in()).get_json()
    with statements(counted_app) as seen:
        response = m.rp.get(USERINFO, headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert response.status_code == 200
    assert response.get_json()["email"] == m.member.email
    assert [shape(s) for s in seen] == ["SELECT tokens"]


def test_sso_authorize_runs_four_statements(counted_app):
    """A member with a session and a remembered consent: /authorize answers with the code."""
    m = Member(counted_app)
    m.sign_in()
    url, verifier = m.authorize_url(scope="openid profile email")
    with statements(counted_app) as seen:
        response = m.browser.get(url)
    assert response.status_code == 302 and response.headers["Location"].startswith(REDIRECT_URI)
    assert [shape(s) for s in seen] == [
        "SELECT clients",
        "SELECT login_sessions",
        "SELECT consents",
        "INSERT authorization_codes",
    ]
    assert m.exchange(query(response.headers["Location"])["code"], verifier).status_code == 200


def test_authorize_for_a_disabled_app_is_refused(counted_app):
    """The per-request client lookup still sees the app's state (disabled: an error page)."""
    m = Member(counted_app)
    m.sign_in()
    row = db.session.scalar(db.select(Client).where(Client.client_id == m.client_id))
    row.status = "disabled"
    db.session.commit()  # by another app (another engine): counted_app hears of it by its notice
    heard_elsewhere()
    url, _ = m.authorize_url()
    response = m.browser.get(url)
    assert response.status_code == 403
    assert "disabled" in response.get_data(as_text=True)


HOT_LOOKUPS = {
    "tokens by access-token hash": "SELECT id FROM tokens WHERE access_token_hash = 'x'",
    "tokens by refresh-token hash": "SELECT id FROM tokens WHERE refresh_token_hash = 'x'",
    "tokens of a grant family": "SELECT id FROM tokens WHERE grant_id = 'x'",
    "tokens of a member and app": "SELECT id FROM tokens WHERE user_id = 'x' AND client_id = 1",
    "codes by hash": "SELECT id FROM authorization_codes WHERE code_hash = 'x'",
    "clients by client_id": "SELECT id FROM clients WHERE client_id = 'x'",
    "sessions by cookie hash": "SELECT id FROM login_sessions WHERE session_hash = 'x'",
    "consent of a member and app": "SELECT id FROM consents WHERE user_id = 'x' AND client_id = 1",
    "interactions by id": "SELECT client_id FROM interactions WHERE id = 'x'",
    "members by email": "SELECT id FROM users WHERE email = 'x'",
}


@pytest.mark.parametrize("lookup", sorted(HOT_LOOKUPS))
def test_every_hot_lookup_uses_an_index(lookup):
    """SQLite's plan names an index (or the primary key) for each lookup: none scans its table."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("plans are checked on SQLite; PostgreSQL may prefer a scan on tiny test tables")
    plan = " ".join(row[-1] for row in db.session.execute(text("EXPLAIN QUERY PLAN " + HOT_LOOKUPS[lookup])))
    # SEARCH (an index seek), not SCAN: "SCAN t USING COVERING INDEX" would still read every entry.
    assert plan.startswith("SEARCH") and "SCAN" not in plan, plan


def test_interactive_sign_in_reads_no_row_it_just_wrote(counted_app):
    """Authorize, login page, login, consent page, consent (5 requests): rows written in a request
    are not read back after its commit (the session keeps them: expire_on_commit=False)."""
    m = Member(counted_app)
    with statements(counted_app) as seen:
        code, verifier = m.sign_in()
    # On PostgreSQL the login's three writes are one statement, and so are the consent answer's
    # single-use mark, consent, audit line and code (data-modifying CTEs; SQLite has none).
    on_postgres = db.engine.dialect.name == "postgresql"
    login = ["WITH started"] if on_postgres else ["INSERT login_sessions", "INSERT audit_events", "UPDATE interactions"]
    answer = (
        ["WITH consumed"]
        if on_postgres
        else ["UPDATE interactions", "INSERT consents", "INSERT audit_events", "INSERT authorization_codes"]
    )
    assert [shape(s) for s in seen] == [
        # /authorize: the app, the parked request
        "SELECT clients",
        "INSERT interactions",
        # the login page, then the login (member, session, audit, the request moves on), which
        # goes on with the parked request at once: to the consent page, which prompt=consent asks
        # for whatever was remembered (so no consent is read).
        # (The member is read with whether a second factor must be asked for, in one query.)
        "SELECT interactions",
        "SELECT interactions",
        "SELECT users",
        *login,
        # the consent page, then the decision (consent, audit, code); each page reads the request
        # with its app, the browser's login and what the member granted the app before in one
        # query (the protocol store), and the decision reuses that app
        "SELECT interactions",
        "SELECT interactions",
        *answer,
    ]
    assert m.exchange(code, verifier).status_code == 200


def test_the_hot_paths_build_no_statement_per_request(counted_app, monkeypatch):
    """Every statement a sign-in, an exchange, a refresh and userinfo run is built once, at import:
    building one per request (and SQLAlchemy then deriving its cache key from it) cost more than
    running it (has_second_factor: 0.16 ms against 0.035 ms, in-process). After a first sign-in,
    none of these requests derives a cache key."""
    from sqlalchemy.sql.cache_key import HasCacheKey

    first, m = Member(counted_app), Member(counted_app)
    warm = first.exchange(*first.sign_in()).get_json()  # every statement used once
    first.refresh(warm["refresh_token"])
    first.rp.get(USERINFO, headers={"Authorization": f"Bearer {warm['access_token']}"})
    derived = []
    original = HasCacheKey._generate_cache_key
    monkeypatch.setattr(HasCacheKey, "_generate_cache_key", lambda self: derived.append(self) or original(self))
    tokens = m.exchange(*m.sign_in()).get_json()
    assert m.refresh(tokens["refresh_token"]).status_code == 200
    assert m.rp.get(USERINFO, headers={"Authorization": f"Bearer {tokens['access_token']}"}).status_code == 200
    # (the key store re-reads signing_keys every KEY_REFRESH_INTERVAL seconds; 0 in the tests)
    assert [str(s)[:60] for s in derived if "signing_keys" not in str(s)] == []
