"""How the store runs a statement: on the request's unit of work (app/store/unit_of_work.py), in
its transaction. Two calls, one path each, whatever is logged:

- `first(statement, params)`: the first row, or None - every lookup, every single-use mark
  (`UPDATE ... RETURNING`), every insert of one row. SQLAlchemy builds and compiles the statement
  once (`_Compiled`), with its bind and result type processing; the running is ours, straight on the
  DBAPI cursor, because SQLAlchemy's path around one execution (a Connection's bookkeeping, an
  execution context, a CursorResult) costs more CPU than the rest of a userinfo answer, and it has
  no lighter way to run a compiled statement (docs/performance.md). The engine's
  `before_cursor_execute` listeners still hear every statement (the statement count, PostgreSQL's
  BEGIN at the first write, traces), and with SQL logging on the statement is logged as SQLAlchemy
  would log it - on the same path.
- `run(statement, params)`: SQLAlchemy's own execution, for a caller that needs more of the result
  (every row, a row count) or a statement SQLAlchemy must complete itself (a Python-side default).

A first statement that finds its pooled connection dead (the database restarted, a proxy closed
it) runs once more on a fresh connection: nothing had been read or written, so it is safe.
Statements are built once, at import: `_Compiled` is kept per statement object, dialect and set
of parameter names (tests/integration/test_query_counts.py holds the hot paths to that).
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flask import g
from sqlalchemy import Connection, CursorResult, Select, UpdateBase
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Executable

from app.store.unit_of_work import UnitOfWork, unit_of_work

log = logging.getLogger(__name__)
Statement = Select[Any] | UpdateBase


class _Compiled:
    """One statement as SQLAlchemy compiles it for one dialect and one set of parameter names, with
    what running it straight on a DBAPI cursor needs: its SQL, its parameters in the driver's form,
    its columns' type processing. A statement whose execution SQLAlchemy would have to complete (a
    Python-side column default to compute, a parameter rendered at execution) is refused here."""

    def __init__(self, statement: Statement, dialect: Dialect, names: frozenset[str]) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=sorted(names))
        if (
            compiled.escaped_bind_names
            or compiled.literal_execute_params
            or compiled.post_compile_params
            or getattr(compiled, "insert_prefetch", None)
            or getattr(compiled, "update_prefetch", None)
            or any(bind.callable is not None or bind.expanding for bind in compiled.binds.values())
        ):
            raise ValueError(f"not a statement to run directly (use statements.run): {compiled.string}")
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
        self.row: Callable[..., tuple[Any, ...]] = namedtuple("Row", [str(key) for key in columns.keys()])  # type: ignore[misc]  # noqa: SIM118 - a column collection iterates its columns

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


_compiled: dict[tuple[Statement, Dialect, frozenset[str]], _Compiled] = {}


def _compile(statement: Statement, dialect: Dialect, params: dict[str, Any]) -> _Compiled:
    key = (statement, dialect, frozenset(params))
    compiled = _compiled.get(key)
    if compiled is None:
        compiled = _compiled[key] = _Compiled(statement, dialect, key[2])
    return compiled


def _on_cursor(compiled: _Compiled, connection: Connection, params: dict[str, Any]) -> tuple[Any, ...] | None:
    """Run one compiled statement on the connection's DBAPI cursor; its first row (of RETURNING,
    for a write). Heard by the engine's listeners and logged, as through SQLAlchemy."""
    engine = connection.engine
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        parameters = compiled.parameters(params)
        engine.dispatch.before_cursor_execute(connection, cursor, compiled.sql, parameters, None, False)
        if engine.logger.isEnabledFor(logging.INFO):
            engine.logger.info("%s", compiled.sql)
            engine.logger.info("[direct] %r", parameters)
        cursor.execute(compiled.sql, parameters)
        return compiled.first(cursor.fetchone() if compiled.results else None)
    finally:
        cursor.close()


def first(statement: Statement, params: dict[str, Any]) -> Any | None:
    """The first row of `statement` (attributes named as its columns: RETURNING's, for a write), or
    None; on the request's connection, in its transaction. Errors are SQLAlchemy's (IntegrityError,
    OperationalError...), with the statement and without its parameters."""
    unit = unit_of_work()
    connection = unit.connection()
    dialect = connection.dialect
    compiled = _compile(statement, dialect, params)
    try:
        return _on_cursor(compiled, connection, params)
    except dialect.loaded_dbapi.Error as error:
        if not dialect.is_disconnect(error, connection.connection.dbapi_connection, None):
            raise DBAPIError.instance(compiled.sql, None, error, dialect.loaded_dbapi.Error, dialect=dialect) from error
    return _after_a_dead_connection(unit, connection, statement, compiled, params)


def _after_a_dead_connection(
    unit: UnitOfWork, connection: Connection, statement: Statement, compiled: _Compiled, params: dict[str, Any]
) -> Any | None:
    """The connection died under the statement. SQLAlchemy meets it again and does what it does on
    one (invalidates the pool's older connections, raises with `connection_invalidated`); when this
    was the unit of work's first statement, it runs once more on a fresh connection."""
    try:
        connection.execute(statement, params)
    except DBAPIError as error:
        if not (error.connection_invalidated and g.get("db_statements", 0) <= 2):
            raise
        log.warning("stale database connection replaced; the statement runs again")
        unit.discard()
        g.db_statements = 0
        return _on_cursor(compiled, unit.connection(), params)
    raise RuntimeError("a dead connection answered the statement the second time")  # pragma: no cover


def run(
    statement: Executable, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
) -> CursorResult[*tuple[Any, ...]]:
    """`statement` through SQLAlchemy's execution, on the request's connection, in its transaction:
    for every row, a row count, or a statement SQLAlchemy completes itself. ORM statements (a
    `select(User)`) go through the session, which is bound to the same connection."""
    return unit_of_work().connection().execute(statement, params)
