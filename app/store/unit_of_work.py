"""A request's unit of work, and a command's: one connection, opened at its first statement, and
the one transaction on it, committed once by what owns the request (`commit`: a page, the token
endpoint, a command) and rolled back when the request ends otherwise. Every statement of the
request runs on it - the store's (app/store/statements.py) and the ORM session's, which a page uses
through `db.session` and which is bound to the same connection (`BoundSession`) - so there is one
transaction to reason about, whatever runs it.

On PostgreSQL a transaction begins at its first write, as Python's sqlite3 driver already does on
SQLite: the SELECTs before it run in autocommit, each on its own. A page that only reads then sends
its SELECTs and nothing else, where psycopg would send a BEGIN before them and the request's end a
ROLLBACK after: two round trips, and a ROLLBACK makes psycopg forget every statement it had
prepared on the connection. Nothing a request sees changes: at READ COMMITTED, which the engine
names for every transaction (app/core/config.py), every statement sees what was committed before it
began, inside a transaction or not; and no read takes a lock (tests/unit/test_units_of_work.py).
Once a request has written, everything after it is in its transaction until the commit or rollback.

There is no pre-ping (a round trip on every checkout). Connections are recycled before proxies
drop them (DATABASE_POOL_RECYCLE), and a request whose first statement finds its connection dead
runs once more on a fresh one: nothing had been read or written yet, so that is safe
(`RetryingFlask` for pages, the store's statements for themselves).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from flask import Flask, g, has_app_context
from flask_sqlalchemy.session import Session as FlaskSession
from psycopg.pq import TransactionStatus
from sqlalchemy import Connection, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from app.core.extensions import db

log = logging.getLogger(__name__)
IDLE = TransactionStatus.IDLE  # psycopg's: no transaction open on the connection
_KEY = "unit_of_work"  # where the app context keeps its UnitOfWork, in `g`


class UnitOfWork:
    """One connection and its transaction, for one request or one command."""

    __slots__ = ("current", "engine", "memo")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.current: Connection | None = None  # none until the first statement
        # Records the request has read and will ask for again (an app, by its keys): the store's
        # implementations keep them here, and drop one when the request changes it.
        self.memo: dict[Any, Any] = {}

    def connection(self) -> Connection:
        """The connection, opened at the first call, in a transaction (begun again after a commit)."""
        connection = self.current
        if connection is None:
            connection = self.current = self.engine.connect()
        if not connection.in_transaction():
            connection.begin()  # with the engine's "begin" listeners, as a session's would
        return connection

    def commit(self) -> None:
        """Commit what the request wrote: the ORM session's changes (flushed first) and the store's."""
        if db.session.registry.has():
            db.session.flush()
        if self.current is not None and self.current.in_transaction():
            self.current.commit()

    def rollback(self) -> None:
        if self.current is not None and self.current.in_transaction():
            self.current.rollback()

    def has_written(self) -> bool:
        """Whether the request has written: its transaction is open on the database, so what it reads
        now may be its own uncommitted change. Until then it reads what was committed."""
        current = self.current
        if current is None or not current.in_transaction():
            return False
        dbapi_connection = current.connection.dbapi_connection
        if self.engine.dialect.name == "postgresql":
            return bool(dbapi_connection.info.transaction_status != IDLE)  # type: ignore[union-attr]
        return bool(dbapi_connection.in_transaction)  # type: ignore[union-attr]  # sqlite3: at the first write

    def discard(self) -> None:
        """Forget a connection that turned out dead (SQLAlchemy has invalidated it)."""
        if self.current is not None:
            self.current.close()
            self.current = None

    def close(self) -> None:
        """End the unit of work: what was not committed is rolled back; the connection goes back."""
        if self.current is not None:
            self.current.close()
            self.current = None


def unit_of_work() -> UnitOfWork:
    """This app context's unit of work (a request's, a command's), made at the first ask."""
    unit: UnitOfWork | None = g.get(_KEY)
    if unit is None:
        unit = UnitOfWork(db.engine)
        setattr(g, _KEY, unit)
    return unit


@contextmanager
def elsewhere(engine: Engine) -> Iterator[None]:
    """Inside the block the request works on `engine` (app/store/catalog_database.py: the catalog's
    replica): a unit of work and an ORM session of their own, which every statement of the store
    and of `db.session` uses, closed when the block ends. The request's own are set aside meanwhile,
    untouched - what they had read, written or left open - and back after it."""
    own_unit = g.get(_KEY)
    sessions = db.session.registry
    own_session = sessions() if sessions.has() else None
    unit = UnitOfWork(engine)
    setattr(g, _KEY, unit)
    session = db.session.session_factory()  # a BoundSession: on `unit`'s connection
    sessions.set(session)
    try:
        yield
    finally:
        session.close()
        unit.close()
        if own_session is not None:
            sessions.set(own_session)
        else:
            sessions.clear()
        if own_unit is not None:
            setattr(g, _KEY, own_unit)
        else:
            g.pop(_KEY, None)


def commit() -> None:
    """Commit the request's unit of work: what owns the request calls this once (the token endpoint
    once more, for a revocation that must stand although the request is refused)."""
    unit_of_work().commit()


def has_written() -> bool:
    unit: UnitOfWork | None = g.get(_KEY)
    return unit is not None and unit.has_written()


class BoundSession(FlaskSession):
    """Flask-SQLAlchemy's session, on the unit of work's connection: the ORM and the store share
    one transaction, and committing or rolling back the session ends it, whichever of them wrote
    (a page's `db.session.commit()` is the unit of work's commit)."""

    def get_bind(self, mapper: Any = None, clause: Any = None, bind: Any = None, **kwargs: Any) -> Any:
        if bind is None and has_app_context():
            return unit_of_work().connection()
        return super().get_bind(mapper, clause, bind, **kwargs)

    def commit(self) -> None:
        super().commit()  # flushes; ends the transaction it joined (`control_fully`)
        unit: UnitOfWork | None = g.get(_KEY) if has_app_context() else None
        if unit is not None:
            unit.commit()  # the store's statements, when the session had joined nothing

    def rollback(self) -> None:
        super().rollback()
        unit: UnitOfWork | None = g.get(_KEY) if has_app_context() else None
        if unit is not None:
            unit.rollback()


# -- a first statement that meets a dead connection ---------------------------------------------------


def _count_statement(*_event: object) -> None:
    """SQLAlchemy's before_cursor_execute: one more statement in this request."""
    if has_app_context():
        g.db_statements = g.get("db_statements", 0) + 1


def first_statement_met_a_dead_connection(error: BaseException) -> bool:
    """A disconnect on the request's first statement: safe to run the request again."""
    return isinstance(error, DBAPIError) and error.connection_invalidated and g.get("db_statements", 0) <= 1


def runs_again_after(error: BaseException) -> bool:
    """Whether the request may run once more after `error` (a dead connection met by its first
    statement); logged when it may. For Flask's views and the WSGI front's answers alike."""
    if not first_statement_met_a_dead_connection(error):
        return False
    log.warning("stale database connection replaced; the request runs again")
    return True


def start_again() -> None:
    """Forget the request's work so far (a dead connection under its first statement) before it
    runs again."""
    db.session.remove()
    unit: UnitOfWork | None = g.get(_KEY)
    if unit is not None:
        unit.discard()
    g.db_statements = 0


class RetryingFlask(Flask):
    """Flask, running a view once more when its first statement found a dead pooled connection."""

    def dispatch_request(self) -> Any:
        try:
            return super().dispatch_request()
        except DBAPIError as error:
            if not runs_again_after(error):
                raise
            start_again()
            return super().dispatch_request()


# -- a transaction begins at its first write (the module's docstring says why) ---------------------


def _reads_in_autocommit(conn: Connection) -> None:
    """SQLAlchemy's begin: nothing is sent yet, and reads go out on their own until the first write."""
    dbapi_connection: Any = conn.connection.dbapi_connection
    if dbapi_connection is not None and dbapi_connection.info.transaction_status == IDLE:
        dbapi_connection.autocommit = True


def is_write(statement: str) -> bool:
    return statement.lstrip()[:6].upper() != "SELECT"


_ALONE: ContextVar[bool] = ContextVar("write_on_its_own", default=False)


@contextmanager
def on_its_own() -> Iterator[None]:
    """A write that, made before the request has written anything, is a transaction of its own: one
    round trip, committed by the server when it answers (no BEGIN, no COMMIT). After a first write
    it joins the request's transaction like any other. For a write that must stand whatever the
    request does next and needs nothing else in its transaction (the meter's count)."""
    token = _ALONE.set(True)
    try:
        yield
    finally:
        _ALONE.reset(token)


def begin_at_first_write(_conn: Connection, cursor: Any, statement: str, *_rest: object) -> None:
    """SQLAlchemy's before_cursor_execute: a statement that is not a SELECT (an INSERT, an UPDATE, a
    DELETE, DDL, a SAVEPOINT...) turns autocommit off, so psycopg sends BEGIN before it and the
    transaction holds everything after it until the commit or rollback (`on_its_own`: not this one)."""
    if cursor.connection.autocommit and is_write(statement) and not _ALONE.get():
        cursor.connection.autocommit = False


def _close_unit_of_work(_error: BaseException | None = None) -> None:
    unit: UnitOfWork | None = g.pop(_KEY, None)
    if unit is not None:
        unit.close()


def init_database(app: Flask) -> None:
    """Bind the database: one unit of work per app context, closed after the ORM session is removed
    (Flask runs teardown functions in the reverse order of their registration)."""
    app.teardown_appcontext(_close_unit_of_work)
    db.init_app(app)
    factory = db.session.session_factory  # Flask-SQLAlchemy's sessionmaker, shared by every app
    factory.class_ = BoundSession
    factory.kw["join_transaction_mode"] = "control_fully"
    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", _count_statement)
        if db.engine.dialect.name == "postgresql":
            event.listen(db.engine, "begin", _reads_in_autocommit)
            event.listen(db.engine, "before_cursor_execute", begin_at_first_write)
