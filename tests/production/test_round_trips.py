"""PostgreSQL round trips per request, read off libpq's own protocol trace: every exchange of
messages that ends in the server's ReadyForQuery is one trip across the network, BEGIN and COMMIT
included. On a database in another machine each costs a network latency, whatever the CPU does.

Budgets (issue 20): a code exchange in at most 5 (the client, read before the transaction; BEGIN,
the code found and spent by one UPDATE ... RETURNING, the tokens, COMMIT), userinfo in at most 2
(one read, no transaction around it), and no pre-ping before either. Once the process keeps a copy
of the app (app/store/row_cache.py), an exchange or a refresh does not read it: 4. A transaction begins at a
request's first write (app/store/unit_of_work.py), so a page that only reads sends its reads alone."""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager

import pytest
from sqlalchemy import event, text
from sqlalchemy.dialects import postgresql

from app import create_app
from app.core.extensions import db
from app.store.postgresql import PostgresTokens
from tests.api_support import database_engines
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import csrf_token
from tests.integration.test_passkeys import options_on
from tests.integration.test_query_counts import USERINFO, Member, forget_kept_rows
from tests.key_support import key_header, make_key
from tests.production.servers import requires_postgres
from tests.soft_authenticator import SoftAuthenticator

pytestmark = requires_postgres


@pytest.fixture(scope="module")
def traced_app(settings):
    # Keys are re-read at most every KEY_REFRESH_INTERVAL seconds in production (10 by default); the
    # test settings re-read them on every request, which is not what is being measured here.
    return create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, "KEY_REFRESH_INTERVAL": 3600})


@contextmanager
def round_trips(app):
    """Count the round trips of every connection `app` checks out inside the block."""
    import psycopg

    with app.app_context():
        engines = database_engines()
    fd, path = tempfile.mkstemp(prefix="pgtrace-")

    def trace(dbapi_conn, record, proxy):
        dbapi_conn.pgconn.trace(fd)
        dbapi_conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)

    def untrace(dbapi_conn, record):
        dbapi_conn.pgconn.untrace()

    for engine in engines:
        event.listen(engine, "checkout", trace)
        event.listen(engine, "checkin", untrace)
    trips: list[str] = []
    try:
        yield trips
    finally:
        for engine in engines:
            event.remove(engine, "checkout", trace)
            event.remove(engine, "checkin", untrace)
        os.close(fd)
        with open(path) as lines:
            messages = [fields for line in lines if len(fields := line.rstrip("\n").split("\t")) >= 3]
        os.unlink(path)
        # One trip per ReadyForQuery, named by the statement the client sent in it (its first word;
        # "prepared" when psycopg ran a statement it had prepared before, which it names by number).
        sent: list[str] = []
        for direction, _, kind, *rest in messages:
            if direction == "F" and kind == "Query":
                sent.append(rest[0].strip().split('"')[1].split()[0].upper())
            elif direction == "F" and kind == "Parse":
                sent.append(rest[0].strip().split('"')[3].split()[0].upper())
            elif direction == "F" and kind == "Bind":
                sent.append("prepared")
            elif direction == "B" and kind == "ReadyForQuery":
                trips.append(sent[0] if sent else "?")
                sent = []


def test_a_code_exchange_takes_three_round_trips_once_its_app_is_kept(traced_app):
    """BEGIN, the statement that spends the code and stores the pair it buys, COMMIT."""
    warm = Member(traced_app)
    warm.exchange(*warm.sign_in())  # keys loaded, statements compiled, the app kept
    m = Member(traced_app)
    code, verifier = m.sign_in()
    with round_trips(traced_app) as trips:
        response = m.exchange(code, verifier)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert len(trips) == 3 and trips[0] == "BEGIN" and trips[1] in ("WITH", "prepared") and trips[-1] == "COMMIT", trips


def test_a_code_refused_after_it_was_spent_is_burnt_in_four_round_trips(traced_app):
    """BEGIN, the statement that spends the code and stores the pair, the pair deleted (the wrong
    verifier: never handed out), COMMIT (the code stays spent), where a rollback ended it before."""
    m = Member(traced_app)
    code, verifier = m.sign_in()  # the app kept since the sign-in read it
    with round_trips(traced_app) as trips:
        response = m.exchange(code, verifier[::-1])
    assert response.status_code == 400 and response.get_json()["error"] == "invalid_grant"
    assert len(trips) == 4 and trips[0] == "BEGIN" and trips[2] == "DELETE" and trips[-1] == "COMMIT", trips
    assert m.exchange(code, verifier).get_json()["error"] == "invalid_grant"


def test_a_code_exchange_whose_app_is_not_kept_takes_four(traced_app):
    m = Member(traced_app)
    code, verifier = m.sign_in()
    forget_kept_rows(traced_app)
    with round_trips(traced_app) as trips:
        response = m.exchange(code, verifier)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert len(trips) == 4 and trips[1] == "BEGIN" and trips[-1] == "COMMIT", trips


def test_a_refresh_takes_three_round_trips_once_its_app_is_kept(traced_app):
    """BEGIN, the statement that spends the old refresh token and stores its successor, COMMIT."""
    m = Member(traced_app)
    first = m.exchange(*m.sign_in()).get_json()
    with round_trips(traced_app) as trips:
        response = m.refresh(first["refresh_token"])
    assert response.status_code == 200, response.get_data(as_text=True)
    assert len(trips) == 3 and trips[0] == "BEGIN" and trips[1] in ("WITH", "prepared") and trips[-1] == "COMMIT", trips


def test_a_refresh_whose_app_is_not_kept_takes_four(traced_app):
    m = Member(traced_app)
    first = m.exchange(*m.sign_in()).get_json()
    forget_kept_rows(traced_app)
    with round_trips(traced_app) as trips:
        response = m.refresh(first["refresh_token"])
    assert response.status_code == 200, response.get_data(as_text=True)
    assert len(trips) == 4 and trips[1] == "BEGIN" and trips[-1] == "COMMIT", trips


def test_only_the_requests_that_write_open_a_transaction(traced_app):
    """A sign-in is five requests, of which three write (/authorize parks the request, the login,
    the consent) and so open a transaction each; the login and consent pages send their reads alone."""
    m = Member(traced_app)
    with round_trips(traced_app) as trips:
        code, _ = m.sign_in()
    assert code and trips.count("BEGIN") == trips.count("COMMIT") == 3 and "ROLLBACK" not in trips, trips


def test_a_sign_in_takes_fifteen_round_trips(traced_app):
    """/authorize 4 (the app, new to this process; BEGIN, the parked request, COMMIT), the login
    page 1, the login 5 (the request, the member; BEGIN, the session with its audit line and the
    request's login in one statement, COMMIT), the consent page 1, the consent 4 (the request with
    its login and what was granted before; BEGIN, the request consumed with the consent, its audit
    line and the code in one statement, COMMIT): 15, where the login's three writes and the
    consent's five statements took 21."""
    Member(traced_app).sign_in()
    m = Member(traced_app)
    with round_trips(traced_app) as trips:
        code, _ = m.sign_in()
    assert code and len(trips) == 15 and trips.count("BEGIN") == 3, " ".join(trips)


def test_userinfo_takes_one_round_trip(traced_app):
    m = Member(traced_app)
    tokens = m.exchange(*m.sign_in()).get_json()
    with round_trips(traced_app) as trips:
        response = m.rp.get(USERINFO, headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert response.status_code == 200 and response.get_json()["sub"]
    assert len(trips) == 1 and trips[0] in ("SELECT", "prepared"), trips  # no pre-ping, no BEGIN, no ROLLBACK


def test_a_refused_bearer_token_takes_one_round_trip_too(traced_app):
    m = Member(traced_app)
    with round_trips(traced_app) as trips:
        response = m.rp.get(USERINFO, headers={"Authorization": "Bearer not-a-token"})
    assert response.status_code == 401
    assert len(trips) == 1, trips


def test_the_sign_in_pages_statements_stay_prepared(traced_app):
    """psycopg prepares a statement after five runs on a connection and forgets them all at a
    ROLLBACK. A page that only reads ends its transaction with COMMIT, so once warm a whole
    sign-in (authorize, login page, login, consent page, consent) parses no statement again."""
    for _ in range(6):
        Member(traced_app).sign_in()
    m = Member(traced_app)
    with round_trips(traced_app) as trips:
        code, _ = m.sign_in()
    assert code and "ROLLBACK" not in trips, trips
    assert {trip for trip in trips if trip not in ("BEGIN", "COMMIT")} == {"prepared"}, trips


# -- what stands in for the pre-ping -----------------------------------------------------------


def kill_pooled_connections(app) -> int:
    """Terminate the PostgreSQL backends behind `app`'s pooled connections, as a database restart
    or a proxy's idle timeout would, without touching anyone else's."""
    with app.app_context():
        engine = db.engine
    pids: set[int] = set()

    def remember(dbapi_conn, record, proxy):
        pids.add(dbapi_conn.info.backend_pid)

    event.listen(engine, "checkout", remember)
    try:  # check out every idle connection once, to learn its backend
        held = [engine.connect() for _ in range(engine.pool.checkedin())]
        for conn in held:
            conn.close()
    finally:
        event.remove(engine, "checkout", remember)
    for pid in pids:
        db.session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    db.session.commit()
    return len(pids)


def test_a_dead_pooled_connection_costs_no_request_an_error(traced_app, caplog):
    m = Member(traced_app)
    first = m.exchange(*m.sign_in()).get_json()
    assert kill_pooled_connections(traced_app) >= 1

    info = m.rp.get(USERINFO, headers={"Authorization": f"Bearer {first['access_token']}"})
    assert info.status_code == 200, info.get_data(as_text=True)
    assert kill_pooled_connections(traced_app) >= 1
    refreshed = m.refresh(first["refresh_token"])
    assert refreshed.status_code == 200, refreshed.get_data(as_text=True)
    assert sum("stale database connection replaced" in r.getMessage() for r in caplog.records) == 2


# -- passkeys -------------------------------------------------------------------------------------


class PasskeyMember:
    """A member with a passkey (added through the account pages) and a new browser, over the test
    client of `traced_app`, answered by a software authenticator."""

    def __init__(self, app):
        self.member = make_member()
        self.authenticator = SoftAuthenticator(app.config["ISSUER_URL"])
        owner = app.test_client()
        login = owner.get("/login").get_data(as_text=True)
        owner.post("/login", data={"csrf_token": csrf_token(login), "email": self.member.email, "password": PASSWORD})
        account = owner.get("/account").get_data(as_text=True)
        create = owner.post(
            "/account/two-step/passkeys/new",
            data={"csrf_token": csrf_token(account), "name": "Laptop", "current": PASSWORD},
        ).get_data(as_text=True)
        answer = self.authenticator.create(options_on(create))
        added = owner.post(
            "/account/two-step/passkeys",
            data={"csrf_token": csrf_token(create), "name": "Laptop", "credential": answer},
        )
        assert added.status_code == 200
        self.browser = app.test_client()


def test_a_passkey_sign_in_takes_ten_round_trips(traced_app):
    """The page that asks for a passkey keeps its challenge: BEGIN, the challenge, COMMIT (3). The
    answer: BEGIN, the challenge used up (DELETE ... RETURNING), the passkey, its count stored if
    it grew (a conditional UPDATE), the member, the session with its audit line, COMMIT (7). With
    the challenge in the cookie and the count stored unconditionally these were 0 and 6."""
    m = PasskeyMember(traced_app)
    login = m.browser.get("/login").get_data(as_text=True)
    with round_trips(traced_app) as page_trips:
        page = m.browser.post("/login/passkey", data={"csrf_token": csrf_token(login)}).get_data(as_text=True)
    answer = m.authenticator.get(options_on(page))
    with round_trips(traced_app) as answer_trips:
        done = m.browser.post("/login/passkey", data={"csrf_token": csrf_token(page), "credential": answer})
    assert done.status_code == 302
    assert page_trips == ["BEGIN", "INSERT", "COMMIT"], page_trips
    assert len(answer_trips) == 7 and answer_trips[:2] == ["BEGIN", "DELETE"], answer_trips


def test_the_second_step_with_a_passkey_takes_fourteen_round_trips_after_the_password(traced_app):
    """After the password (1, unchanged), the second step's page reads the member, their passkeys,
    whether they have an app and recovery codes, and keeps the challenge (BEGIN, INSERT, COMMIT):
    7 where it was 5. The answer: the member, BEGIN, the challenge used up, the passkey, its count,
    the session, COMMIT: 7 where it was 6."""
    m = PasskeyMember(traced_app)
    login = m.browser.get("/login").get_data(as_text=True)
    password = m.browser.post(
        "/login", data={"csrf_token": csrf_token(login), "email": m.member.email, "password": PASSWORD}
    )
    with round_trips(traced_app) as page_trips:
        page = m.browser.get(password.headers["Location"]).get_data(as_text=True)
    answer = m.authenticator.get(options_on(page))
    with round_trips(traced_app) as answer_trips:
        done = m.browser.post(
            "/login/second-factor/passkey", data={"csrf_token": csrf_token(page), "credential": answer}
        )
    assert done.status_code == 302
    assert len(page_trips) == 7 and "INSERT" in page_trips, page_trips
    assert len(answer_trips) == 7 and "DELETE" in answer_trips, answer_trips


def test_a_catalog_call_through_the_key_door_takes_two_round_trips_once_its_key_is_kept(traced_app):
    """The catalog's read and the meter's count, committed as it is written: the key is this
    process's copy (app/store/row_cache.py) and the connection already carries the catalog's time
    bound (app/store/time_bound.py), so neither costs a trip."""
    _key, value = make_key()
    client = traced_app.test_client()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    with round_trips(traced_app) as trips:
        response = client.get("/v1/roles", headers=key_header(value))
    assert response.status_code == 200 and response.get_json()["data"]
    assert len(trips) == 2 and "BEGIN" not in trips, trips


def generic_plan(statement) -> str:
    """PostgreSQL's generic plan of `statement` (the plan a statement psycopg has prepared settles
    on once PostgreSQL finds it no dearer than the custom ones), from EXPLAIN of it PREPAREd."""
    names: list[str] = []

    def numbered(match: re.Match) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    sql = re.sub(r"%\((\w+)\)s", numbered, str(statement.compile(dialect=postgresql.dialect())))
    with db.engine.connect() as conn:
        driver = conn.connection.dbapi_connection
        driver.execute("SET plan_cache_mode = force_generic_plan")
        driver.execute(f"PREPARE rotation AS {sql}")
        nulls = ", ".join("NULL" for _ in names)
        plan = "\n".join(row[0] for row in driver.execute(f"EXPLAIN EXECUTE rotation({nulls})"))
        driver.execute("DEALLOCATE rotation")
        driver.execute("RESET plan_cache_mode")
        driver.rollback()
    return plan


def test_a_rotation_finds_its_token_by_the_hash_whatever_the_tables_statistics(traced_app):
    """With statistics like a busy provider's (many members and apps, each pair of them holding a
    token or two), PostgreSQL's generic plan of the rotation finds the token through its hash's
    index. When the rotation also named the token's member, it chose the (member, app) index
    there, reading every token the member had ever held at the app: a cost that grew with each
    rotation (refresh at 1.5-2x the peer's CPU in `make bench`)."""
    apps = [make_client()[0].id for _ in range(20)]
    with traced_app.app_context():
        with db.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO users (id, sub, email, email_verified, name, password_hash, tier, role,"
                    " created_at, updated_at) SELECT 'member-' || n, 'sub-' || n, 'm' || n || '@example.test',"
                    " true, 'M', 'x', 'basic', 'member', now(), now() FROM generate_series(1, 1000) AS n"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO tokens (client_id, user_id, grant_id, scope, access_token_hash, refresh_token_hash,"
                    " issued_at, access_expires_at, refresh_expires_at, auth_time) SELECT"
                    " (:apps)[1 + n % 20], 'member-' || (1 + n % 1000), 'grant-' || n, 'openid',"
                    " md5('a' || n) || md5('x' || n), md5('r' || n) || md5('y' || n), now(), now(), now(), now()"
                    " FROM generate_series(1, 20000) AS n"
                ),
                {"apps": apps},
            )
            conn.execute(text("ANALYZE tokens"))
        plan = generic_plan(PostgresTokens()._rotate._in_one)
    update = plan[plan.index("Update on tokens") :].split("->  Insert on tokens")[0]
    assert "uq_tokens_refresh_token_hash" in update and "ix_tokens_user_client" not in update, plan
