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
token's lookup), and an app's read before the request has written: straight on a pooled DBAPI
connection of its own, outside the request's session, and again through SQLAlchemy when that
connection turns out dead (the WSGI front answers userinfo without RetryingFlask). `run_first`
runs the token endpoint's writes and a sign-in's hottest statements the same way on the request's
own connection, in its transaction.

A request's unit of work is its connection and the one transaction on it, committed once by the
route or command that owns the request (`commit`). For pages and commands it is the ORM session's.
The token endpoint, answered at the WSGI front with Core statements only, runs on a
`CoreUnitOfWork` instead: the same kind of pooled connection and transaction without the session
around them, whose bookkeeping (the Session and its transaction, the flush and the identity map at
the commit, closing it) cost 0.12-0.19 ms of an exchange's or a refresh's 2-2.7 ms in-process on
SQLite. `request_connection`, `commit`, `run_first` and `execute` serve whichever the request runs
on; a write on any other connection meanwhile is refused (`_one_writer`), since it would be a
second transaction beside the request's, waiting for the request's own locks.

On PostgreSQL a transaction begins at its first write (`begin_at_first_write`), as Python's
sqlite3 driver already does on SQLite: the SELECTs before it run in autocommit, each on its own.
A page that only reads (the login and consent pages, the account and console pages) then sends
its SELECTs and nothing else, where psycopg would send a BEGIN before them and the request's end
a COMMIT or ROLLBACK after: two round trips, and a ROLLBACK makes psycopg forget every statement
it had prepared on the connection. Nothing a request sees changes: at PostgreSQL's default
isolation, READ COMMITTED, which the engine names for every transaction (app/core/config.py) whatever
the server's default, every statement sees what was committed before it began, inside a
transaction or not; and no read here takes a lock (no SELECT ... FOR
UPDATE; tests/unit/test_units_of_work.py holds the code to that). Once a request has written,
everything after it, reads included, is in its transaction until the commit or rollback.
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from flask import Flask, g, has_app_context
from psycopg.pq import TransactionStatus
from sqlalchemy import CTE, Connection, CursorResult, Row, Select, Table, UpdateBase, bindparam, event, select
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Executable

from app.core.extensions import db

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


class _Direct:
    """One statement as SQLAlchemy compiles it for one dialect and one set of parameter names, with
    what running it straight on a DBAPI cursor needs: its SQL, its parameters in the driver's form,
    its columns' type processing. Statements whose execution SQLAlchemy would have to complete (a
    Python-side column default to compute, a parameter rendered at execution) are refused here."""

    def __init__(self, statement: Select[Any] | UpdateBase, dialect: Dialect, names: frozenset[str]) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=sorted(names))
        if (
            compiled.escaped_bind_names
            or compiled.literal_execute_params
            or compiled.post_compile_params
            or getattr(compiled, "insert_prefetch", None)
            or getattr(compiled, "update_prefetch", None)
            or any(bind.callable is not None or bind.expanding for bind in compiled.binds.values())
        ):
            raise ValueError(f"not a statement to run directly: {compiled.string}")
        self.sql = compiled.string
        self.positions = compiled.positiontup if compiled.positional else None
        self.fixed = {name: bind.value for name, bind in compiled.binds.items() if not bind.required}
        self.binds = {
            name: processor
            for name, bind in compiled.binds.items()
            if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        }
        columns = statement.exported_columns  # a SELECT's, or RETURNING's
        self.results = [column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns]
        self.row: Callable[..., tuple[Any, ...]] = namedtuple("Row", [str(key) for key in columns.keys()])  # type: ignore[misc]

    def parameters(self, params: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...]:
        values = {**self.fixed, **params} if self.fixed else params
        if self.binds:
            values = {**values, **{name: process(values[name]) for name, process in self.binds.items()}}
        return values if self.positions is None else tuple(values[name] for name in self.positions)

    def first(self, values: Sequence[Any] | None) -> tuple[Any, ...] | None:
        if values is None:
            return None
        processed = (
            value if process is None else process(value) for process, value in zip(self.results, values, strict=True)
        )
        return self.row(*processed)


_compiled: dict[tuple[Select[Any] | UpdateBase, Dialect, frozenset[str]], _Direct] = {}


def _direct(statement: Select[Any] | UpdateBase, dialect: Dialect, params: dict[str, Any]) -> _Direct:
    """`statement` compiled for `dialect` and these parameters' names, once: statements are built at
    import (tests/integration/test_query_counts.py holds the hot paths to that), so this keeps one
    entry per statement, dialect and set of names."""
    key = (statement, dialect, frozenset(params))
    direct = _compiled.get(key)
    if direct is None:
        direct = _compiled[key] = _Direct(statement, dialect, key[2])
    return direct


def _as_sqlalchemys(error: Exception, direct: _Direct, dialect: Dialect) -> BaseException:
    """The driver's `error` as SQLAlchemy raises it (IntegrityError, OperationalError...), with the
    statement and without its parameters."""
    return DBAPIError.instance(direct.sql, None, error, dialect.loaded_dbapi.Error, dialect=dialect)


def _statements_logged(engine: Engine) -> bool:
    """Whether SQLAlchemy's engine logger writes out statements (an operator turned on SQL logging):
    then they all go through SQLAlchemy, which writes them."""
    return bool(engine.logger.isEnabledFor(logging.INFO))


def _run(
    direct: _Direct, engine: Engine, connection: Connection | None, dbapi_connection: Any, params: dict[str, Any]
) -> tuple[Any, ...] | None:
    """Run one compiled statement on a DBAPI connection; its first row (of RETURNING, for a write).
    The engine's before_cursor_execute listeners hear of it as of any statement (the statement
    count, PostgreSQL's BEGIN at the first write, tracing), with the SQLAlchemy Connection it runs
    on, or None outside one (read_row)."""
    cursor = dbapi_connection.cursor()
    try:
        parameters = direct.parameters(params)
        engine.dispatch.before_cursor_execute(connection, cursor, direct.sql, parameters, None, False)
        cursor.execute(direct.sql, parameters)
        return direct.first(cursor.fetchone() if direct.results else None)
    finally:
        cursor.close()


def read_row(statement: Select[Any], params: dict[str, Any]) -> Any | None:
    """The first row of one SELECT (attributes named as the statement's columns), on a pooled
    connection of its own, outside the request's session; on PostgreSQL in autocommit (no BEGIN, no
    ROLLBACK: one round trip). A pooled connection that turns out dead is dropped and the read runs
    again through SQLAlchemy's own path, which retires the pool's other old connections.

    Run straight on the DBAPI cursor (`_Direct`): SQLAlchemy builds the statement, its SQL and its
    type processing; only the running is ours, because SQLAlchemy's path around one execution (a
    Connection and its transaction bookkeeping, an execution context, a CursorResult) cost more CPU
    than the rest of a userinfo answer together, and it has no lighter way to run a compiled
    statement (docs/performance.md, the sixteenth round)."""
    if g.get(_CORE) is not None:
        # On the request's own connection, one checkout from the pool fewer: before the request
        # writes it reads what a connection of its own would (what was committed), after it the
        # request's own changes besides.
        return run_first(statement, params)
    engine = db.engine
    if _statements_logged(engine):
        return _read_row_through_sqlalchemy(statement, params)
    dialect = engine.dialect
    direct = _direct(statement, dialect, params)
    connection = None
    try:
        connection = engine.raw_connection()  # the pool's checkout and its events, as for any request
        if dialect.name == "postgresql":
            _autocommit_until_first_write(connection.dbapi_connection)
        return _run(direct, engine, None, connection.dbapi_connection, params)
    except dialect.loaded_dbapi.Error as error:
        if connection is None or not dialect.is_disconnect(error, connection.dbapi_connection, None):
            raise _as_sqlalchemys(error, direct, dialect) from error
        connection.invalidate(error)
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


def run_first(statement: Select[Any] | UpdateBase, params: dict[str, Any]) -> Any | None:
    """`execute(statement, params).first()` for a statement whose caller needs no more than its first
    row (the token endpoint's spend-and-store, a sign-in's statements, an audit line): on the request's
    connection, in its transaction (the unit of work), run straight on the DBAPI cursor as read_row
    runs its read, for the same reason (through SQLAlchemy's path an exchange's or a refresh's two
    statements cost about a sixth of its CPU). Its first row has attributes named as the statement's
    columns (RETURNING's, for a write), or None; a statement whose caller needs more of the result
    (a row count, every row) goes through `execute`. Never for a statement that changes apps: the
    app cache hears of those from SQLAlchemy's execution (app/store/app_cache.py).

    An error is SQLAlchemy's, as through `execute`; a dead connection is handed to SQLAlchemy with
    the statement, which meets it again and does what it does on one (invalidates the pool's older
    connections, raises with `connection_invalidated`, and the request may run again)."""
    connection = request_connection()
    if _statements_logged(connection.engine):
        return _first_through_sqlalchemy(connection, statement, params)
    dialect = connection.dialect
    direct = _direct(statement, dialect, params)
    dbapi_connection = connection.connection.dbapi_connection
    try:
        return _run(direct, connection.engine, connection, dbapi_connection, params)
    except dialect.loaded_dbapi.Error as error:
        if dialect.is_disconnect(error, dbapi_connection, None):
            return _first_through_sqlalchemy(connection, statement, params)
        raise _as_sqlalchemys(error, direct, dialect) from error


def _first_through_sqlalchemy(connection: Connection, statement: Executable, params: dict[str, Any]) -> Any | None:
    result = connection.execute(statement, params)
    return result.first() if result.returns_rows else None


def execute(
    statement: Executable, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
) -> CursorResult[*tuple[Any, ...]]:
    """Run a Core statement on the request's connection, in its transaction (the unit of work): for
    a page, the ORM session's, exactly as through `db.session.execute`. The session's
    own `execute` routes a Core statement to that same connection after its ORM bookkeeping, which
    does nothing for Core (no autoflush, no loading) and costs about a seventh of a statement's
    CPU: 60 µs against 51 for the request's interaction (in-process, SQLite); over a sign-in, 1-2 %
    (docs/performance.md, the fourteenth round). ORM statements (a `select(User)`, a
    `delete(Consent)`) still go through the session: this one would hand back bare rows."""
    return request_connection().execute(statement, params)


class CoreUnitOfWork:
    """A request's unit of work without the ORM session: one pooled connection, a transaction
    begun on it at the first statement after each commit, closed (what is uncommitted rolled back)
    when the request ends. For a request that runs Core statements only: the token endpoint at the
    front (the module's docstring says why)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.current: Connection | None = None  # none until the first statement

    def connection(self) -> Connection:
        connection = self.current
        if connection is None:
            connection = self.current = self._engine.connect()
        if not connection.in_transaction():
            connection.begin()  # with the engine's "begin" listeners, as a session's would
        return connection

    def commit(self) -> None:
        if self.current is not None and self.current.in_transaction():
            self.current.commit()

    def close(self) -> None:
        if self.current is not None:
            self.current.close()  # rolls back what was not committed; back to the pool
            self.current = None


_CORE = "core_unit_of_work"  # where the request's CoreUnitOfWork is kept, in `g`


@contextmanager
def core_unit_of_work() -> Iterator[CoreUnitOfWork]:
    """Serve the rest of the request (in its app context) on a CoreUnitOfWork, closed at the end
    whatever happens: an exception leaves nothing of the request written."""
    unit = CoreUnitOfWork(db.engine)
    setattr(g, _CORE, unit)
    try:
        yield unit
    finally:
        g.pop(_CORE, None)
        unit.close()


def request_connection() -> Connection:
    """The request's connection, in its transaction: its CoreUnitOfWork's when it runs on one, else
    the ORM session's."""
    unit: CoreUnitOfWork | None = g.get(_CORE)
    return db.session.connection() if unit is None else unit.connection()


def commit() -> None:
    """Commit the request's unit of work, the ORM session's or a CoreUnitOfWork: what owns the
    request calls this once (the token endpoint once more, for a revocation or a burnt code that
    must stand although the request is refused)."""
    unit: CoreUnitOfWork | None = g.get(_CORE)
    if unit is None:
        db.session.commit()
    else:
        unit.commit()


def _open_transaction() -> Any | None:
    """The DBAPI connection of the request's transaction once one is open (SQLAlchemy's: the
    driver's may not have begun yet), else None."""
    unit: CoreUnitOfWork | None = g.get(_CORE)
    if unit is not None:
        current = unit.current
        return current.connection.dbapi_connection if current is not None and current.in_transaction() else None
    if not db.session().in_transaction():
        return None  # the session has sent nothing yet
    return db.session.connection().connection.dbapi_connection


def on_postgresql() -> bool:
    """Whether the app's database is PostgreSQL: there the store folds a step's several writes into
    one statement (data-modifying CTEs), which SQLite cannot run."""
    return bool(db.engine.dialect.name == "postgresql")


def has_written() -> bool:
    """Whether the request has written: its transaction is open, so what it reads now may be its own
    uncommitted change, which only its own connection sees. Until then a read on any connection
    (read_row) sees what the request's would: what was committed."""
    dbapi_connection = _open_transaction()
    if dbapi_connection is None:
        return False
    if on_postgresql():
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


def _is_write(statement: str) -> bool:
    return statement.lstrip()[:6].upper() != "SELECT"


def _one_writer(conn: Connection | None, _cursor: Any, statement: str, *_rest: object) -> None:
    """SQLAlchemy's before_cursor_execute: while a request runs on a CoreUnitOfWork, a write on any
    other connection (the ORM session's, say) is refused at once. It would be a second transaction
    beside the request's, waiting for the request's own locks: on SQLite its write lock, for up to
    the busy timeout; on PostgreSQL the rows it changed, for ever. A read elsewhere is harmless:
    it sees what was committed, as read_row's do."""
    if conn is None or not has_app_context():
        return
    unit: CoreUnitOfWork | None = g.get(_CORE)
    if unit is not None and conn is not unit.current and _is_write(statement):
        raise RuntimeError("a write outside the request's unit of work (app.store.database.request_connection)")


def begin_at_first_write(_conn: Connection, cursor: Any, statement: str, *_rest: object) -> None:
    """SQLAlchemy's before_cursor_execute: a statement that is not a SELECT (an INSERT, an
    UPDATE, a DELETE, DDL, a SAVEPOINT...) turns autocommit off, so psycopg sends BEGIN before it
    and the transaction holds everything after it until the commit or rollback."""
    if cursor.connection.autocommit and _is_write(statement):
        cursor.connection.autocommit = False


def init_database(app: Flask) -> None:
    db.init_app(app)
    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", _count_statement)
        event.listen(db.engine, "before_cursor_execute", _one_writer)
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
