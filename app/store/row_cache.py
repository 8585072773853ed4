"""Rows kept between requests on PostgreSQL - apps, and the API keys requests present - for as long
as the database can vouch for them.

Every code exchange and refresh begins by reading its app, to authenticate it, and every request
through the key door by reading its key with the key's owner: one round trip each, for rows that
almost never change. node oidc-provider keeps its apps in its configuration; ours are rows the
console changes, so a copy may be used only while the database can say it still holds. PostgreSQL
can say so. Migrations 0012 and 0024 put triggers on `clients`, `api_keys` and `users` that send
NOTIFY `credits_id_rows` whenever a statement changes or deletes their rows, delivered when that
transaction commits. Each process holds one connection of its own LISTENing on the channel, and
before every use of a copy it reads what that connection has received: one non-blocking read of
its socket, under a microsecond. Any notice drops every copy (changes are rare: a console edit, a
revocation, a suspension).

- **A change committed anywhere** (the console, the command line, an operator's psql) is seen by
  the next lookup of every process once PostgreSQL has delivered its notice (usually already there
  when the writer's COMMIT returns; tests/production/test_row_cache.py bounds the rest).
- **A change this process writes** drops the copies at once (`forget_on_write`), and a read inside
  a transaction (which may see that transaction's own, uncommitted change) is never kept: only
  reads outside one, of committed rows (app/store/unit_of_work.py: on PostgreSQL the reads before
  a request's first write run on their own).
- **A read that began before a drop** is not kept (a generation count), so a copy read just before
  a change cannot outlive the notice that dropped its predecessors.
- **While the listening connection is down**, nothing is kept and every lookup reads the row. A
  new connection is tried at most every RECONNECT_SECONDS; its first act is to drop everything,
  since notices sent while it was down are lost. TCP keepalives find a connection that died
  silently, and no copy is used longer than APP_CACHE_SECONDS whatever happens.

SQLite sends no notices (and its reads cost no round trip): there rows are read on every request.
APP_CACHE_SECONDS=0 turns the copies off, as a deployment behind a proxy that does not carry
LISTEN (PgBouncer in transaction mode) must. Written here because no library keeps reads through
SQLAlchemy coherent by LISTEN/NOTIFY.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.pq import ConnStatus
from sqlalchemy import Connection, Engine

CHANNEL = "credits_id_rows"
# The tables whose changes drop the copies, and the trigger on each that sends the notice.
TRIGGERS = {"clients": "clients_changed", "api_keys": "api_keys_changed", "users": "users_changed"}
RECONNECT_SECONDS = 5.0
EXTENSION = "credits_id.row_cache"
MAX_COPIES = 20_000  # past it every copy is dropped: a bound on memory, not a policy
LISTENER_NAME = "credits-id row changes"  # as pg_stat_activity names the listening connections
# A listening connection that died without a word (a half-open TCP connection) is found by the
# kernel in about keepalives_idle + keepalives_interval * keepalives_count seconds.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}

log = logging.getLogger(__name__)

Key = tuple[str, Any]
V = TypeVar("V")


class RowCache(Generic[V]):
    """Copies of rows under keys their readers choose (an app under its client id and its row id, a
    key under its value's hash), good while the listening connection is up and has brought no
    notice since they were read, and for at most `seconds`."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], seconds: float) -> None:
        self._connect = connect
        self._seconds = seconds
        self._lock = threading.Lock()
        self._copies: dict[Key, tuple[float, V]] = {}
        self._listener: psycopg.Connection[Any] | None = None
        self._pid = os.getpid()
        self._retry_at = 0.0
        self._farewell = False
        self.generation = 0

    def get(self, key: Key) -> V | None:
        """The copy under `key` (`("client_id", ...)`, `("id", ...)`, `("api_key", digest)`), if one
        is still good."""
        with self._lock:
            if not self._vouched():
                return None
            kept = self._copies.get(key)
        return kept[1] if kept is not None and kept[0] > time.monotonic() else None

    def keep(self, value: V, generation: int, *keys: Key) -> None:
        """Keep `value` under each of `keys`, read from committed rows after `generation` was current."""
        with self._lock:
            if generation == self.generation and self._listener is not None:
                if len(self._copies) + len(keys) > MAX_COPIES:
                    self._copies.clear()
                copy = (time.monotonic() + self._seconds, value)
                for key in keys:
                    self._copies[key] = copy

    def forget(self) -> None:
        """Drop every copy, and refuse any read that began before now."""
        with self._lock:
            self._forget()

    def close(self) -> None:
        with self._lock:
            self._hang_up()

    # -- under the lock --------------------------------------------------------------------------

    def _forget(self) -> None:
        self.generation += 1
        self._copies.clear()

    def _vouched(self) -> bool:
        """Whether copies may be used: the listening connection is up (opened now if it is due),
        and every notice it has brought has been acted on."""
        if self._pid != os.getpid():  # a forked child: the parent's socket is not this process's
            self._listener, self._pid = None, os.getpid()
            self._forget()
        if self._listener is None and not self._listen():
            return False
        assert self._listener is not None
        pgconn = self._listener.pgconn
        changed = False
        try:
            pgconn.consume_input()  # what the socket holds, without waiting
            while pgconn.notifies() is not None:  # parses it: notices, and the server's farewell
                changed = True
            lost = self._farewell or pgconn.status != ConnStatus.OK
        except psycopg.OperationalError:  # the socket closed under it
            lost = True
        if lost:
            log.warning("the connection listening for row changes was lost; rows are read every time until it is back")
            self._hang_up()
            self._retry_at = time.monotonic() + RECONNECT_SECONDS  # the database may be restarting
            return False
        if changed:
            self._forget()
        return True

    def _on_notice(self, diagnostic: psycopg.errors.Diagnostic) -> None:
        """A server that ends the connection (a restart, pg_terminate_backend) first says so with
        a FATAL message, which reaches an idle connection as a notice: it is lost from then on,
        even before its socket reads as closed."""
        if diagnostic.severity_nonlocalized in ("FATAL", "PANIC"):
            self._farewell = True

    def _listen(self) -> bool:
        """Open the listening connection, at most every RECONNECT_SECONDS; False while it is not up."""
        now = time.monotonic()
        if now < self._retry_at:
            return False
        self._retry_at = now + RECONNECT_SECONDS
        try:
            listener = self._connect()
            wanted = list(TRIGGERS.values())
            found = {
                name for (name,) in listener.execute("SELECT tgname FROM pg_trigger WHERE tgname = ANY(%s)", (wanted,))
            }
            missing = [name for name in wanted if name not in found]
            if missing:
                log.warning("no %s trigger (run the migrations): rows are read every time", ", ".join(missing))
                listener.close()
                return False
            listener.execute(f"LISTEN {CHANNEL}")
            listener.add_notice_handler(self._on_notice)
        except psycopg.Error as error:
            log.warning("cannot listen for row changes (%s): rows are read every time", type(error).__name__)
            return False
        self._listener, self._farewell = listener, False
        self._forget()  # notices sent while nobody listened are lost
        return True

    def _hang_up(self) -> None:
        listener, self._listener = self._listener, None
        self._forget()
        if listener is not None:
            with contextlib.suppress(psycopg.Error):
                listener.close()


def forget_on_write(cache: RowCache[Any]) -> Callable[..., None]:
    """SQLAlchemy's after_cursor_execute: a statement of this process that changes or deletes rows
    of a kept table drops the copies at once, without waiting for its notice."""

    def after_cursor_execute(
        _conn: Connection, _cursor: Any, _sql: str, _params: Any, context: Any, _many: bool
    ) -> None:
        if context is not None and (context.isupdate or context.isdelete):
            table = getattr(getattr(context.compiled, "statement", None), "table", None)
            if getattr(table, "name", None) in TRIGGERS:
                cache.forget()

    return after_cursor_execute


def listener_connect(engine: Engine, connect_timeout: int) -> Callable[[], psycopg.Connection[Any]]:
    """How to open the listening connection: the engine's database and credentials, autocommit,
    named in pg_stat_activity, with TCP keepalives."""
    _args, params = engine.dialect.create_connect_args(engine.url)
    settings: dict[str, Any] = {key: value for key, value in params.items() if key != "context"}
    settings.update(KEEPALIVES, connect_timeout=connect_timeout, application_name=LISTENER_NAME)

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(autocommit=True, **settings)

    return connect
