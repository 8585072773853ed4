"""The catalog's own database, when it has one (`CATALOG_DATABASE_URL`, issue 47): a PostgreSQL
read replica of the main database that the catalog's reads go to.

Why: a saturated catalog's statements run in PostgreSQL processes, and on a machine the sign-in
shares with the database those processes take the sign-in's cores whatever serve.py does with its
own (`CATALOG_CPUS` places the app's processes, not the database's). A replica started on the
catalog's cores, or on another machine, takes that load with it: docs/performance.md measures it.

What goes there: the statements of a catalog call's *view* - the key door's `/v1` and `/embed/v1`
handlers (app/web/api/gateway.py) and the tool server's tools (app/web/toolserver/server.py) -
inside `reading_the_catalog()`. What stays on DATABASE_URL: everything around the view, which must
see the latest committed rows or write - the key and its owner (and the row cache that keeps them,
whose notices a replica does not carry), the pay gate, the meter's count, the key's activity - and
the whole sign-in.

A replica lags its primary by what replication has not yet applied (usually milliseconds): a
catalog edit shows on the catalog door that much later; nothing that decides access is read there.
The engine is read-only however it is pointed (`default_transaction_read_only`: a write sent there
by mistake fails rather than landing on a primary), in autocommit (a replica's reads need no
transaction, and none is begun), checks a pooled connection before use (a replica restarts on its
own schedule, and the request retry of app/store/unit_of_work.py counts only the main database's
statements), and bounds statements as the main engine does for catalog calls (app/store/time_bound.py).

Without `CATALOG_DATABASE_URL`, `reading_the_catalog()` changes nothing: the view reads the
request's own unit of work, as every request did before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask, current_app
from sqlalchemy import Engine, create_engine

from app.store.time_bound import bound_on_checkout
from app.store.unit_of_work import elsewhere

EXTENSION = "credits_id.catalog_engine"
READ_ONLY = "-c default_transaction_read_only=on"


def init_catalog_database(app: Flask) -> None:
    """Make the catalog's engine when `CATALOG_DATABASE_URL` names a database: the main engine's
    pool settings, read-only, in autocommit, checked before each use."""
    url = app.config.get("CATALOG_DATABASE_URL") or ""
    if not url:
        return
    options: dict[str, Any] = dict(app.config["SQLALCHEMY_ENGINE_OPTIONS"])
    connect_args = dict(options.pop("connect_args", {}))
    connect_args["options"] = f"{connect_args.get('options', '')} {READ_ONLY}".strip()
    options.update(isolation_level="AUTOCOMMIT", pool_pre_ping=True, connect_args=connect_args)
    engine = create_engine(url, **options)
    bound_on_checkout(engine)
    app.extensions[EXTENSION] = engine


def catalog_engine() -> Engine | None:
    """The catalog's engine, or None when the catalog reads the main database."""
    engine: Engine | None = current_app.extensions.get(EXTENSION)
    return engine


@contextmanager
def reading_the_catalog() -> Iterator[None]:
    """Inside the block every statement - the store's and the ORM's - goes to the catalog's
    database, when it has one; the request's own unit of work is back after it, as it was."""
    engine = catalog_engine()
    if engine is None:
        yield
        return
    with elsewhere(engine):
        yield
