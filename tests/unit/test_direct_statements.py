"""Statements run straight on a DBAPI cursor (app/store/database.py): read_row, the bearer token's read on
a pooled connection of its own, and run_first, the token endpoint's writes on the request's. They
must give the row SQLAlchemy gives (the same names, values and types), be heard by the engine's
listeners, stay in the request's transaction, refuse a statement SQLAlchemy would have to complete,
survive or report a dead connection as SQLAlchemy does, and fail as SQLAlchemy fails. On SQLite
and, under TEST_DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, column, event, select, table, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.core.extensions import db
from app.models import Token, User
from app.models.base import new_uuid, sha256_hex, utcnow
from app.store.database import has_written, read_row, run_first
from app.store.tokens import _BY_ACCESS_HASH, _INSERT, find_bearer
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
    row = read_row(_BY_ACCESS_HASH, params)
    assert row._fields == tuple(expected._fields)
    assert tuple(row) == tuple(expected)
    assert [type(value) for value in row] == [type(value) for value in expected]
    assert row.issued_at.tzinfo is not None and row.member_email_verified is True
    assert read_row(_BY_ACCESS_HASH, {"hash": sha256_hex("no such token")}) is None


def test_parameters_get_their_types_processing():
    """A bound datetime goes out as SQLAlchemy would send it (on SQLite, its own text form)."""
    member = make_member()
    users = User.__table__
    statement = select(users.c.id).where(users.c.created_at < bindparam("before"))
    assert read_row(statement, {"before": utcnow() + timedelta(minutes=1)}).id == member.id
    assert read_row(statement, {"before": utcnow() - timedelta(days=1)}) is None


def test_the_engines_listeners_hear_the_statement(access_token):
    heard: list[str] = []

    def listen(conn, cursor, statement, parameters, context, executemany):
        heard.append(statement)

    event.listen(db.engine, "before_cursor_execute", listen)
    try:
        assert find_bearer(access_token) is not None
    finally:
        event.remove(db.engine, "before_cursor_execute", listen)
    assert len(heard) == 1 and heard[0].startswith("SELECT tokens.id")


def test_a_dead_pooled_connection_is_dropped_and_the_read_runs_again(access_token, caplog):
    """The connection the pool hands out next has died while idle (here: closed under it)."""
    db.session.remove()
    db.engine.dispose()  # a pool of one connection, the dead one
    pooled = db.engine.raw_connection()
    dead = pooled.dbapi_connection
    pooled.close()  # back to the pool: the next checkout gets it
    dead.close()
    with caplog.at_level(logging.WARNING, logger="app.store.database"):
        token = find_bearer(access_token)
    assert token is not None and token.scope == "openid email"
    assert "stale database connection replaced; the read runs again" in caplog.text
    assert find_bearer(access_token) is not None  # and the pool serves on


def test_an_error_is_sqlalchemys_and_the_connection_goes_back(access_token):
    checked_out = db.engine.pool.checkedout()
    with pytest.raises(DBAPIError) as raised:
        read_row(
            select(column("id")).select_from(table("no_such_table")).where(column("id") == bindparam("id")), {"id": 1}
        )
    assert not raised.value.connection_invalidated and "no_such_table" in str(raised.value)
    assert db.engine.pool.checkedout() == checked_out
    assert find_bearer(access_token) is not None


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
    row = run_first(revoke, {"hash": sha256_hex(access_token), "now": now})
    assert row._fields == ("id", "scope", "revoked_at", "refresh_used_at")
    assert row.scope == "openid email" and row.revoked_at == now and row.refresh_used_at.tzinfo is not None
    assert has_written()
    assert find_bearer(access_token) is not None  # another connection: nothing committed yet
    db.session.rollback()  # the unit of work was not committed: the change goes with it
    assert db.session.scalars(select(Token)).one().revoked_at is None
    assert run_first(revoke, {"hash": sha256_hex("no such token"), "now": now}) is None


def test_a_statement_sqlalchemy_would_have_to_complete_is_refused():
    """A column default computed in Python (users.created_at) is SQLAlchemy's execution's work."""
    users = User.__table__
    with pytest.raises(ValueError, match="not a statement to run directly"):
        run_first(users.insert().returning(users.c.id), {"id": new_uuid(), "sub": "s", "email": "e@example.test"})
    assert not has_written()


def test_a_duplicate_is_sqlalchemys_integrity_error(access_token):
    stored = db.session.scalars(select(Token)).one()
    columns = {
        name: getattr(stored, name) for name in ("client_id", "user_id", "grant_id", "scope", "auth_time", "amr")
    }
    times = {"issued_at": stored.issued_at, "access_expires_at": stored.access_expires_at, "refresh_expires_at": None}
    db.session.rollback()
    with pytest.raises(IntegrityError):
        run_first(
            _INSERT, {**columns, **times, "access_token_hash": sha256_hex(access_token), "refresh_token_hash": None}
        )
    db.session.rollback()
    assert run_first(
        _INSERT, {**columns, **times, "access_token_hash": sha256_hex("another"), "refresh_token_hash": None}
    ).id


def test_a_dead_connection_under_a_write_is_reported_as_sqlalchemy_reports_it(access_token):
    """SQLAlchemy meets the same dead connection and marks it invalidated (so a request whose first
    statement it was runs again); after a rollback the session serves on with a new one."""
    tokens = Token.__table__
    revoke = (
        update(tokens)
        .where(tokens.c.access_token_hash == bindparam("hash"))
        .values(revoked_at=bindparam("now"))
        .returning(tokens.c.id)
    )
    db.session.connection().connection.dbapi_connection.close()
    with pytest.raises(DBAPIError) as raised:
        run_first(revoke, {"hash": sha256_hex(access_token), "now": utcnow()})
    assert raised.value.connection_invalidated
    db.session.rollback()
    assert run_first(revoke, {"hash": sha256_hex(access_token), "now": utcnow()}) is not None


def test_with_sql_logging_on_the_statements_go_through_sqlalchemy_and_are_logged(access_token, caplog):
    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine.Engine"):
        assert find_bearer(access_token) is not None
        assert run_first(_BY_ACCESS_HASH, {"hash": sha256_hex(access_token)}) is not None
    assert [r.getMessage().startswith("SELECT tokens.id") for r in caplog.records].count(True) == 2


def test_with_sql_logging_on_a_write_without_returning_still_runs(caplog):
    """A write with no RETURNING has no row to give through SQLAlchemy either (this one, which sets
    an `onupdate` column, could only run that way)."""
    member = make_member()
    users = User.__table__
    rename = update(users).where(users.c.id == bindparam("member")).values(name=bindparam("new_name"))
    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine.Engine"):
        assert run_first(rename, {"member": member.id, "new_name": "Renamed"}) is None
    assert any(r.getMessage().startswith("UPDATE users SET name") for r in caplog.records)
    assert db.session.execute(select(users.c.name).where(users.c.id == member.id)).scalar() == "Renamed"
