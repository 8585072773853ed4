"""How the store runs a statement (app/store/statements.py): `first` runs it straight on the DBAPI
cursor of the request's connection. It must give the row SQLAlchemy gives (the same names, values
and types), be heard by the engine's listeners, stay in the request's transaction, refuse a
statement SQLAlchemy would have to complete, run a first statement again on a fresh connection
when its connection died, fail as SQLAlchemy fails, and run the same code whether or not SQL is
logged. On SQLite and, under TEST_DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, column, event, select, table, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.core.extensions import db
from app.models import Token, User
from app.models.base import new_uuid, sha256_hex, utcnow
from app.store import statements, store
from app.store.statements import first
from app.store.tokens import _BY_ACCESS_HASH, _INSERT
from app.store.unit_of_work import has_written
from tests.factories import make_client, make_member


@pytest.fixture
def access_token():
    """An access token (its value) issued to a member, with its refresh token rotated once."""
    member, (client, _) = make_member(), make_client()
    value, now = new_uuid(), utcnow()
    db.session.add(
        Token(
            client_id=client.id,
            user_id=member.id,
            grant_id=new_uuid(),
            scope="openid email",
            access_token_hash=sha256_hex(value),
            refresh_token_hash=sha256_hex(new_uuid()),
            issued_at=now,
            access_expires_at=now + timedelta(hours=1),
            refresh_expires_at=now + timedelta(days=1),
            refresh_used_at=now,
            auth_time=now,
        )
    )
    db.session.commit()
    return value


def test_the_row_is_the_one_sqlalchemy_gives(access_token):
    params = {"hash": sha256_hex(access_token)}
    with db.engine.connect() as conn:
        expected = conn.execute(_BY_ACCESS_HASH, params).one()
    row = first(_BY_ACCESS_HASH, params)
    assert row._fields == tuple(expected._fields)
    assert tuple(row) == tuple(expected)
    assert [type(value) for value in row] == [type(value) for value in expected]
    assert row.issued_at.tzinfo is not None and row.member_email_verified is True
    assert first(_BY_ACCESS_HASH, {"hash": sha256_hex("no such token")}) is None


def test_parameters_get_their_types_processing():
    """A bound datetime goes out as SQLAlchemy would send it (on SQLite, its own text form)."""
    member = make_member()
    users = User.__table__
    statement = select(users.c.id).where(users.c.created_at < bindparam("before"))
    assert first(statement, {"before": utcnow() + timedelta(minutes=1)}).id == member.id
    assert first(statement, {"before": utcnow() - timedelta(days=1)}) is None


def test_the_engines_listeners_hear_the_statement(access_token):
    heard: list[str] = []

    def listen(conn, cursor, statement, parameters, context, executemany):
        heard.append(statement)

    event.listen(db.engine, "before_cursor_execute", listen)
    try:
        assert store().tokens.find_bearer(access_token) is not None
    finally:
        event.remove(db.engine, "before_cursor_execute", listen)
    assert len(heard) == 1 and heard[0].startswith("SELECT tokens.id")


def test_a_first_statement_on_a_dead_pooled_connection_runs_again(app, access_token, caplog):
    """The connection the pool hands out next has died while idle (here: closed under it)."""
    db.engine.dispose()  # a pool of one connection, the dead one
    pooled = db.engine.raw_connection()
    dead = pooled.dbapi_connection
    pooled.close()  # back to the pool: the next checkout gets it
    dead.close()
    with app.app_context(), caplog.at_level(logging.WARNING, logger="app.store.statements"):  # a request
        token = store().tokens.find_bearer(access_token)
        assert token is not None and token.scope == "openid email"
    assert "stale database connection replaced; the statement runs again" in caplog.text
    with app.app_context():
        assert store().tokens.find_bearer(access_token) is not None  # and the pool serves on


def test_an_error_is_sqlalchemys_and_the_connection_goes_back(app, access_token):
    checked_out = db.engine.pool.checkedout()
    with app.app_context():  # a request
        with pytest.raises(DBAPIError) as raised:
            first(
                select(column("id")).select_from(table("no_such_table")).where(column("id") == bindparam("id")),
                {"id": 1},
            )
    assert not raised.value.connection_invalidated and "no_such_table" in str(raised.value)
    assert db.engine.pool.checkedout() == checked_out
    with app.app_context():
        assert store().tokens.find_bearer(access_token) is not None


def test_has_written_tells_when_only_the_requests_connection_sees_its_reads():
    users = User.__table__
    db.session.remove()
    assert not has_written()
    db.session.execute(select(users.c.id)).all()
    assert not has_written()  # a read opens no transaction, on either store
    db.session.execute(update(users).where(users.c.id == "nobody").values(name="x"))
    assert has_written()
    db.session.rollback()
    assert not has_written()


def test_a_write_returns_its_row_typed_and_stays_in_the_requests_transaction(access_token):
    tokens = Token.__table__
    revoke = (
        update(tokens)
        .where(tokens.c.access_token_hash == bindparam("hash"))
        .values(revoked_at=bindparam("now"))
        .returning(tokens.c.id, tokens.c.scope, tokens.c.revoked_at, tokens.c.refresh_used_at)
    )
    now = utcnow()
    row = first(revoke, {"hash": sha256_hex(access_token), "now": now})
    assert row._fields == ("id", "scope", "revoked_at", "refresh_used_at")
    assert row.scope == "openid email" and row.revoked_at == now and row.refresh_used_at.tzinfo is not None
    assert has_written()
    with db.engine.connect() as other:  # nothing committed yet
        assert other.execute(select(tokens.c.revoked_at)).scalar_one() is None
    db.session.rollback()  # the unit of work was not committed: the change goes with it
    assert db.session.scalars(select(Token)).one().revoked_at is None
    assert first(revoke, {"hash": sha256_hex("no such token"), "now": now}) is None


def test_a_statement_sqlalchemy_would_have_to_complete_is_refused():
    """A column default computed in Python (users.created_at) is SQLAlchemy's execution's work."""
    users = User.__table__
    with pytest.raises(ValueError, match="not a statement to run directly"):
        first(users.insert().returning(users.c.id), {"id": new_uuid(), "sub": "s", "email": "e@example.test"})
    assert not has_written()


def test_a_duplicate_is_sqlalchemys_integrity_error(access_token):
    stored = db.session.scalars(select(Token)).one()
    columns = {
        name: getattr(stored, name) for name in ("client_id", "user_id", "grant_id", "scope", "auth_time", "amr")
    }
    times = {"issued_at": stored.issued_at, "access_expires_at": stored.access_expires_at, "refresh_expires_at": None}
    db.session.rollback()
    with pytest.raises(IntegrityError):
        first(_INSERT, {**columns, **times, "access_token_hash": sha256_hex(access_token), "refresh_token_hash": None})
    db.session.rollback()
    assert first(
        _INSERT, {**columns, **times, "access_token_hash": sha256_hex("another"), "refresh_token_hash": None}
    ).id


def test_a_dead_connection_under_a_later_statement_is_reported_as_sqlalchemy_reports_it(access_token):
    """Not a first statement: SQLAlchemy meets the same dead connection, marks it invalidated and
    raises; after a rollback the unit of work serves on with a new one."""
    tokens = Token.__table__
    revoke = (
        update(tokens)
        .where(tokens.c.access_token_hash == bindparam("hash"))
        .values(revoked_at=bindparam("now"))
        .returning(tokens.c.id)
    )
    first(select(tokens.c.id), {})
    first(select(tokens.c.id), {})  # the request has run statements on it already
    db.session.connection().connection.dbapi_connection.close()
    with pytest.raises(DBAPIError) as raised:
        first(revoke, {"hash": sha256_hex(access_token), "now": utcnow()})
    assert raised.value.connection_invalidated
    db.session.rollback()
    assert first(revoke, {"hash": sha256_hex(access_token), "now": utcnow()}) is not None


def test_with_sql_logging_on_the_same_code_runs_and_logs_each_statement(access_token, caplog, monkeypatch):
    ran: list[str] = []
    real = statements._on_cursor
    monkeypatch.setattr(
        statements, "_on_cursor", lambda compiled, *rest: ran.append(compiled.sql) or real(compiled, *rest)
    )
    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine.Engine"):
        assert store().tokens.find_bearer(access_token) is not None
        assert first(_BY_ACCESS_HASH, {"hash": sha256_hex(access_token)}) is not None
    assert len(ran) == 2  # the direct path, logging or not
    messages = [r.getMessage() for r in caplog.records]
    assert [m.startswith("SELECT tokens.id") for m in messages].count(True) == 2
    assert [m.startswith("[direct]") for m in messages].count(True) == 2


def test_with_sql_logging_on_a_statement_the_direct_path_refuses_is_refused_still(caplog):
    """An `onupdate` column (users.updated_at) is SQLAlchemy's execution's to fill: `run` it."""
    member = make_member()
    users = User.__table__
    rename = update(users).where(users.c.id == bindparam("member")).values(name=bindparam("new_name"))
    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine.Engine"):
        with pytest.raises(ValueError, match="not a statement to run directly"):
            first(rename, {"member": member.id, "new_name": "Renamed"})
        assert statements.run(rename, {"member": member.id, "new_name": "Renamed"}).rowcount == 1
    assert db.session.execute(select(users.c.name).where(users.c.id == member.id)).scalar() == "Renamed"
