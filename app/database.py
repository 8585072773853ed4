"""The connection to the database, and what stands in for a pre-ping.

A pre-ping (`SELECT 1` at every checkout from the pool) costs a PostgreSQL round trip on every
request, to guard against a rare event: a pooled connection that died while idle (the database
restarted, a proxy or firewall closed it). Instead:

- connections are replaced before they grow old (`DATABASE_POOL_RECYCLE`), below the idle limits
  of proxies and load balancers;
- a request whose *first* statement finds its connection dead runs once more on a fresh one.
  Nothing had been read or written yet, so running it again is safe. SQLAlchemy then also retires
  every connection of the pool older than the failure, so one request per process meets a dead
  connection after an outage, and it does not see an error either.

`read_row` serves requests whose only database work is one indexed read (userinfo, a bearer
token's lookup): straight on a pooled DBAPI connection of its own, outside the request's session,
and again through SQLAlchemy when that connection turns out dead (the WSGI front answers userinfo
without RetryingFlask).

On PostgreSQL a transaction begins at its first write (`begin_at_first_write`), as Python's
sqlite3 driver already does on SQLite: the SELECTs before it run in autocommit, each on its own.
A page that only reads (the login and consent pages, the account and console pages) then sends
its SELECTs and nothing else, where psycopg would send a BEGIN before them and the request's end
a COMMIT or ROLLBACK after: two round trips, and a ROLLBACK makes psycopg forget every statement
it had prepared on the connection. Nothing a request sees changes: at PostgreSQL's default
isolation, READ COMMITTED, which the engine names for every transaction (app/config.py) whatever
the server's default, every statement sees what was committed before it began, inside a
transaction or not; and no read here takes a lock (no SELECT ... FOR
UPDATE; tests/unit/test_units_of_work.py holds the code to that). Once a request has written,
everything after it, reads included, is in its transaction until the commit or rollback.
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flask import Flask, g, has_app_context
from psycopg.pq import TransactionStatus
from sqlalchemy import CTE, Connection, CursorResult, Row, Select, Table, bindparam, event, select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Executable

from app.extensions import db

log = logging.getLogger(__name__)
IDLE = TransactionStatus.IDLE  # psycopg's: no transaction open on the connection


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


class RetryingFlask(Flask):
    """Flask, running a view once more when its first statement found a dead pooled connection."""

    def dispatch_request(self) -> Any:
        try:
            return super().dispatch_request()
        except DBAPIError as error:
            if not runs_again_after(error):
                raise
            db.session.remove()
            g.db_statements = 0
            return super().dispatch_request()


class _DirectRead:
    """One SELECT, compiled by SQLAlchemy for one dialect, with what running it straight on a DBAPI
    cursor needs: its SQL, how its parameters are passed, its columns' type processing."""

    def __init__(self, statement: Select[Any], dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        if compiled.escaped_bind_names or compiled.literal_execute_params or compiled.post_compile_params:
            raise ValueError("read_row runs plain bound parameters only")
        self.sql = compiled.string
        self.positions = compiled.positiontup if compiled.positional else None
        self.binds = {
            name: processor
            for name, bind in compiled.binds.items()
            if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        }
        columns = statement.selected_columns
        self.results = [column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns]
        self.row: Callable[..., tuple[Any, ...]] = namedtuple("Row", list(columns.keys()))  # type: ignore[misc]

    def parameters(self, params: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...]:
        values = {name: processor(params[name]) for name, processor in self.binds.items()}
        values = {**params, **values} if values else params
        return values if self.positions is None else tuple(values[name] for name in self.positions)

    def first(self, values: Sequence[Any] | None) -> tuple[Any, ...] | None:
        if values is None:
            return None
        processed = (
            value if process is None else process(value) for process, value in zip(self.results, values, strict=True)
        )
        return self.row(*processed)


_direct_reads: dict[tuple[Select[Any], Dialect], _DirectRead] = {}


def read_row(statement: Select[Any], params: dict[str, Any]) -> Any | None:
    """The first row of one SELECT (attributes named as the statement's columns), on a pooled
    connection of its own, outside the request's session; on PostgreSQL in autocommit (no BEGIN, no
    ROLLBACK: one round trip). A pooled connection that turns out dead is dropped and the read runs
    again through SQLAlchemy's own path, which retires the pool's other old connections.

    Written by hand: the hottest read of all (a bearer token's, on every userinfo and /v1 call).
    SQLAlchemy builds the statement, its SQL and its type processing; only the running is ours.
    SQLAlchemy's path around one execution (a Connection and its transaction bookkeeping, an
    execution context, connection events, a CursorResult) cost more CPU than the rest of a userinfo
    answer together, about two fifths of it, and it has no lighter way to run a compiled statement
    (docs/performance.md, the sixteenth round)."""
    engine = db.engine
    dialect = engine.dialect
    direct = _direct_reads.get((statement, dialect))
    if direct is None:
        direct = _direct_reads[statement, dialect] = _DirectRead(statement, dialect)
    dbapi_error = dialect.loaded_dbapi.Error
    connection = cursor = None
    try:
        connection = engine.raw_connection()  # the pool's checkout and its events, as for any request
        if dialect.name == "postgresql":
            _autocommit_until_first_write(connection.dbapi_connection)
        cursor = connection.cursor()
        parameters = direct.parameters(params)
        # The engine's listeners hear of it as of any statement (counted, traced), with no Connection.
        engine.dispatch.before_cursor_execute(None, cursor, direct.sql, parameters, None, False)
        cursor.execute(direct.sql, parameters)
        values = cursor.fetchone()
        cursor.close()
    except dbapi_error as error:
        if connection is None or not dialect.is_disconnect(error, connection.dbapi_connection, cursor):
            raise DBAPIError.instance(direct.sql, None, error, dbapi_error, dialect=dialect) from error
        connection.invalidate(error)
    else:
        return direct.first(values)
    finally:
        if connection is not None:
            connection.close()  # back to the pool
    log.warning("stale database connection replaced; the read runs again")
    return _read_row_through_sqlalchemy(statement, params)


def _read_row_through_sqlalchemy(statement: Select[Any], params: dict[str, Any]) -> Row[Any] | None:
    for attempt in (1, 2):
        try:
            with db.engine.connect() as conn:
                return conn.execute(statement, params).first()
        except DBAPIError as error:
            if attempt == 2 or not error.connection_invalidated:
                raise
            log.warning("stale database connection replaced; the read runs again")
    return None  # not reached: the loop returns or raises


def execute(
    statement: Executable, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
) -> CursorResult[*tuple[Any, ...]]:
    """Run a Core statement on the request's connection: the ORM session's, so it is part of the
    session's transaction (the unit of work) exactly as through `db.session.execute`. The session's
    own `execute` routes a Core statement to that same connection after its ORM bookkeeping, which
    does nothing for Core (no autoflush, no loading) and costs about a seventh of a statement's
    CPU: 60 µs against 51 for the request's interaction (in-process, SQLite); over a sign-in, 1-2 %
    (docs/performance.md, the fourteenth round). ORM statements (a `select(User)`, a
    `delete(Consent)`) still go through the session: this one would hand back bare rows."""
    return db.session.connection().execute(statement, params)


def has_written() -> bool:
    """Whether the request has written: its transaction is open, so what it reads now may be its own
    uncommitted change, which only its own connection sees. Until then a read on any connection
    (read_row) sees what the request's would: what was committed."""
    if not db.session().in_transaction():
        return False  # the session has sent nothing yet
    dbapi_connection = db.session.connection().connection.dbapi_connection
    if dbapi_connection is None:
        return False
    if db.engine.dialect.name == "postgresql":
        return bool(dbapi_connection.info.transaction_status != IDLE)
    return bool(dbapi_connection.in_transaction)  # sqlite3 opens a transaction at the first write


# -- a transaction begins at its first write (the module's docstring says why) ---------------------


def _reads_in_autocommit(conn: Connection) -> None:
    """SQLAlchemy's begin (a session or connection starts a transaction): nothing is sent yet, and
    reads go out on their own until the first write."""
    _autocommit_until_first_write(conn.connection.dbapi_connection)


def _autocommit_until_first_write(dbapi_connection: Any) -> None:
    """A psycopg connection with no transaction open sends its reads on their own (autocommit)."""
    if dbapi_connection is not None and dbapi_connection.info.transaction_status == IDLE:
        dbapi_connection.autocommit = True


def begin_at_first_write(_conn: Connection, cursor: Any, statement: str, *_rest: object) -> None:
    """SQLAlchemy's before_cursor_execute: a statement that is not a SELECT (an INSERT, an
    UPDATE, a DELETE, DDL, a SAVEPOINT...) turns autocommit off, so psycopg sends BEGIN before it
    and the transaction holds everything after it until the commit or rollback."""
    if cursor.connection.autocommit and statement.lstrip()[:6].upper() != "SELECT":
        cursor.connection.autocommit = False


def init_database(app: Flask) -> None:
    db.init_app(app)
    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", _count_statement)
        if db.engine.dialect.name == "postgresql":
            event.listen(db.engine, "begin", _reads_in_autocommit)
            event.listen(db.engine, "before_cursor_execute", begin_at_first_write)


# -- several writes in one statement (PostgreSQL's data-modifying CTEs) -----------------------------


def rows_for_each(source: CTE, table: Table, columns: Sequence[str], prefix: str) -> Select[Any]:
    """One row of bound values for each row of `source` (none or one), to INSERT ... SELECT into
    `table`: a write that happens only when the statement's first step matched. Each of `columns`
    is bound as `prefix` + its name, typed as `table`'s column (`prefixed` makes the parameters)."""
    values = (bindparam(f"{prefix}{name}", type_=table.c[name].type) for name in columns)
    return select(*values).select_from(source)


def prefixed(prefix: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """`row`'s values as the parameters `rows_for_each` binds."""
    return {f"{prefix}{name}": value for name, value in row.items()}
