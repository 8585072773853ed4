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
token's lookup): on an autocommit connection, so PostgreSQL sees the SELECT alone, without a
BEGIN before it and a ROLLBACK after it.

A transaction that only read ends with COMMIT, not ROLLBACK (`end_read_only_transaction`).
psycopg prepares a statement on a connection once it has run it five times, so PostgreSQL
parses and plans it only once; but it forgets every prepared statement, and every count, at each
ROLLBACK. Flask-SQLAlchemy ends a request's transaction with a ROLLBACK when the view did not
commit, so every page that only reads (the login and consent pages, the second half of a
sign-in) wiped the connection's statements, and on PostgreSQL the sign-in's statements were
parsed and planned afresh on every request. To the database, COMMIT and ROLLBACK of a
transaction that wrote nothing are the same.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, g, has_app_context
from sqlalchemy import Connection, Row, event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.sql import Executable

from app.extensions import db

log = logging.getLogger(__name__)


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


def read_row(statement: Executable, params: dict[str, Any]) -> Row[Any] | None:
    """The first row of one SELECT run outside any transaction (autocommit); retried once on a fresh
    connection when the pooled one turns out dead."""
    for attempt in (1, 2):
        try:
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                return conn.execute(statement, params).first()
        except DBAPIError as error:
            if attempt == 2 or not error.connection_invalidated:
                raise
            log.warning("stale database connection replaced; the read runs again")
    return None  # not reached: the loop returns or raises


# -- a transaction that only read ends with COMMIT (the module's docstring says why) -----------

_WROTE = "credits_id.transaction_wrote"


def _transaction_began(conn: Connection) -> None:
    conn.info[_WROTE] = False


def _statement_ran(conn: Connection, _cursor: object, statement: str, *_rest: object) -> None:
    """Anything but a SELECT counts as a write (an INSERT, an UPDATE, a lock, a SET...)."""
    if statement.lstrip()[:6].upper() != "SELECT":
        conn.info[_WROTE] = True


def _statement_failed(context: ExceptionContext) -> None:
    """A failed statement leaves the transaction for ROLLBACK to end."""
    if context.connection is not None:
        context.connection.info[_WROTE] = True


def end_read_only_transaction(_exc: BaseException | None = None) -> None:
    """Commit the app context's open transaction when it ran only SELECTs that succeeded and the
    session holds no change of its own; anything else is left for the session's close to roll
    back. Registered after Flask-SQLAlchemy's teardown, so it runs before it."""
    if not db.session.registry.has():
        return
    session = db.session()
    if not session.in_transaction() or session.new or session.dirty or session.deleted:
        return
    try:
        if not session.connection().info.get(_WROTE, True):
            session.commit()
    except SQLAlchemyError:
        pass  # a lost connection or a transaction to roll back: the session's close rolls it back


def init_database(app: Flask) -> None:
    db.init_app(app)
    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", _count_statement)
        event.listen(db.engine, "begin", _transaction_began)
        event.listen(db.engine, "before_cursor_execute", _statement_ran)
        event.listen(db.engine, "handle_error", _statement_failed)
    app.teardown_appcontext(end_read_only_transaction)  # Flask runs teardowns last-registered first
