"""A bound on how long the statements of one call may run: the catalog's (issue 47), so that no
search, however unlucky its keyword, holds the database's CPU - and a worker - for as long as it
likes. The sign-in's statements never carry it.

    with bounded(ms):      every statement the unit of work sends meanwhile is bounded; one that
        ...                runs past the bound raises StatementTimeout (the caller rolls its work back)

How each store bounds a statement (the implementation is chosen once, by `init_time_bound`):

- PostgreSQL (app/store/time_bound_postgresql.py): the connection's own `statement_timeout`, set
  at session level when a bounded call takes the connection and reset when an unbounded one next
  takes it (a pool checkout). A connection keeps what it was last set to, so a stream of catalog
  calls pays no round trip for it; the first sign-in request after one pays one RESET.
- SQLite: the connection's progress handler, which SQLite calls every `STEPS` virtual-machine
  instructions and which interrupts the statement once the call's deadline has passed. The bound
  is on the whole call there (one deadline for all its statements), not on each statement.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, Protocol

from flask import Flask, current_app, g, has_app_context
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.store.unit_of_work import unit_of_work

EXTENSION = "credits_id.time_bound"
_WANTED = "statement_bound_ms"  # in `g`: the bound the request's statements carry now, if any
_HANDLED = "credits_id.progress_handler"  # in the pool record's info: a handler is set
STEPS = 1000  # SQLite instructions between two looks at the clock (a few microseconds' work)


class StatementTimeout(Exception):
    """A statement of a bounded call ran past its bound; the call's work was rolled back."""

    def __init__(self, bound_ms: int) -> None:
        super().__init__(f"a statement ran past its bound of {bound_ms} ms")
        self.bound_ms = bound_ms


class TimeBound(Protocol):
    """How one store bounds the statements on a connection."""

    def conform(self, dbapi_connection: Any, info: MutableMapping[str, Any], bound_ms: int | None) -> None:
        """Make the connection bound by `bound_ms` (None: unbounded), if it is not already."""

    def is_timeout(self, error: BaseException) -> bool:
        """Whether the driver's `error` is a statement stopped by the bound."""

    def after(self, dbapi_connection: Any, info: MutableMapping[str, Any]) -> None:
        """The bounded call is over, its connection still open."""


class SqliteBound:
    """The progress handler: the call's deadline, looked at every STEPS instructions."""

    def conform(self, dbapi_connection: Any, info: MutableMapping[str, Any], bound_ms: int | None) -> None:
        if bound_ms is None:
            if info.pop(_HANDLED, None):  # only a connection this module bounded is touched
                dbapi_connection.set_progress_handler(None, 0)
            return
        deadline = time.monotonic() + bound_ms / 1000
        dbapi_connection.set_progress_handler(lambda: time.monotonic() > deadline, STEPS)
        info[_HANDLED] = True

    def is_timeout(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.OperationalError) and str(error) == "interrupted"

    def after(self, dbapi_connection: Any, info: MutableMapping[str, Any]) -> None:
        self.conform(dbapi_connection, info, None)  # a C call: cleared at once


def _wanted() -> int | None:
    bound: int | None = g.get(_WANTED) if has_app_context() else None
    return bound


def _on_checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    """The pool hands out a connection: bound as the request taking it wants (a catalog call that
    opens its connection now), unbounded otherwise (a sign-in after a catalog call)."""
    chosen: TimeBound | None = current_app.extensions.get(EXTENSION) if has_app_context() else None
    if chosen is not None:
        chosen.conform(dbapi_connection, record.info, _wanted())


def init_time_bound(app: Flask, engine: Engine) -> None:
    """Choose the store's way of bounding a statement, and conform each connection the pool hands out."""
    if engine.dialect.name == "postgresql":
        from app.store.time_bound_postgresql import PostgresBound

        chosen: TimeBound = PostgresBound()
    else:
        chosen = SqliteBound()
    app.extensions[EXTENSION] = chosen
    bound_on_checkout(engine)


def bound_on_checkout(engine: Engine) -> None:
    """Conform each connection `engine`'s pool hands out to the bound the request taking it wants
    (the main engine, and the catalog's own when it has one: app/store/catalog_database.py)."""
    if not event.contains(engine, "checkout", _on_checkout):
        event.listen(engine, "checkout", _on_checkout)


@contextmanager
def bounded(bound_ms: int) -> Iterator[None]:
    """Bound every statement the unit of work sends inside the block by `bound_ms` milliseconds
    (0: no bound). The connection is taken now if the request has none yet. A statement stopped by
    the bound rolls the unit of work back and raises StatementTimeout."""
    if bound_ms <= 0:
        yield
        return
    chosen: TimeBound = current_app.extensions[EXTENSION]
    g.statement_bound_ms = bound_ms
    unit = unit_of_work()
    opened = unit.current is not None
    connection = unit.connection()  # a fresh checkout conforms it (_on_checkout)
    proxied = connection.connection
    if opened:
        chosen.conform(proxied.dbapi_connection, proxied.info, bound_ms)
    try:
        yield
    except Exception as error:
        if not chosen.is_timeout(getattr(error, "orig", None) or error):
            raise
        raise StatementTimeout(bound_ms) from None  # the edge that owns the unit of work rolls it back
    finally:
        g.pop(_WANTED, None)
        current = unit.current
        if current is not None and not current.invalidated:
            chosen.after(current.connection.dbapi_connection, current.connection.info)
