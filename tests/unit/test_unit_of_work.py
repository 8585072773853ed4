"""One unit of work per request and per command (app/store/unit_of_work.py): one connection, opened
at the first statement, and the one transaction on it, which the store's statements and the ORM
session share. What the request commits stands; what it leaves uncommitted, or an exception
leaves, is rolled back when its app context ends; `has_written` follows it; the whole request
takes one connection from the pool. On SQLite and, under TEST_DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, event, func, select, text
from sqlalchemy.exc import DBAPIError

from app.core.extensions import db
from app.models import AuditEvent
from app.models.base import new_uuid
from app.services.audit import event_row, write_event
from app.store import statements
from app.store.unit_of_work import commit, elsewhere, has_written

EVENTS = AuditEvent.__table__


def an_address() -> str:
    return f"{new_uuid()}@unit-of-work.test"


def committed(address: str) -> int:
    """Audit lines for `address` that another connection sees: committed ones."""
    with db.engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(EVENTS).where(EVENTS.c.actor_email == address))


def line(address: str) -> dict[str, object]:
    return event_row("signin.failed", actor_email=address)


def test_what_it_commits_stands_and_what_it_leaves_is_rolled_back(app):
    kept, left = an_address(), an_address()
    with app.app_context():  # a request
        write_event(line(kept))
        commit()
        write_event(line(left))  # a new transaction after the commit, never committed
        assert committed(left) == 0
    assert (committed(kept), committed(left)) == (1, 0)


def test_an_exception_leaves_nothing_written(app):
    address = an_address()
    with pytest.raises(LookupError), app.app_context():
        write_event(line(address))
        raise LookupError("the request failed after its write")
    assert committed(address) == 0


def test_the_store_and_the_orm_session_share_one_transaction(app):
    by_store, by_orm, dropped = an_address(), an_address(), an_address()
    with app.app_context():
        write_event(line(by_store))
        db.session.add(AuditEvent(**line(by_orm)))
        db.session.flush()
        assert statements.first(select(func.count().label("n")).select_from(EVENTS), {}).n == 2  # both, uncommitted
        db.session.commit()  # a page's commit ends the store's writes too
        write_event(line(dropped))
        db.session.rollback()  # and its rollback drops them
    assert (committed(by_store), committed(by_orm), committed(dropped)) == (1, 1, 0)


def test_has_written_follows_the_unit_of_work(app):
    with app.app_context():
        assert not has_written()
        statements.first(select(func.count().label("n")).select_from(EVENTS), {})
        assert not has_written()  # a read opens no transaction on the database
        write_event(line(an_address()))
        assert has_written()
        commit()
        assert not has_written()


def test_a_request_takes_one_connection_whatever_runs_its_statements(app):
    checkouts: list[object] = []
    listen = lambda *_args: checkouts.append(_args)  # noqa: E731
    event.listen(db.engine, "checkout", listen)
    try:
        with app.app_context():
            statements.first(select(func.count().label("n")).select_from(EVENTS), {})
            db.session.scalar(select(func.count()).select_from(AuditEvent))
            write_event(line(an_address()))
            db.session.add(AuditEvent(**line(an_address())))
            commit()
            statements.first(select(func.count().label("n")).select_from(EVENTS), {})
    finally:
        event.remove(db.engine, "checkout", listen)
    assert len(checkouts) == 1


def test_elsewhere_sends_the_blocks_statements_to_another_database_and_gives_the_request_back(app, tmp_path):
    """`elsewhere` (the catalog's replica, app/store/catalog_database.py): inside the block the
    store's statements and the ORM's go to the other engine; the request's own work, written
    before it and still uncommitted, is there after it and commits as usual."""
    other = create_engine(f"sqlite:///{tmp_path / 'other.sqlite3'}")
    with other.begin() as conn:
        conn.execute(text("CREATE TABLE marks (name TEXT)"))
        conn.execute(text("INSERT INTO marks VALUES ('elsewhere')"))
    kept = an_address()
    with app.app_context():
        write_event(line(kept))  # the request's own transaction, open
        with elsewhere(other):
            assert statements.run(text("SELECT name FROM marks")).scalar_one() == "elsewhere"
            assert db.session.scalar(text("SELECT name FROM marks")) == "elsewhere"
            assert not has_written()  # the other unit has written nothing
        assert has_written()
        with pytest.raises(DBAPIError):  # no such table
            statements.run(text("SELECT name FROM marks"))  # back on the request's own database
        db.session.rollback()
    assert committed(kept) == 0
    with app.app_context():
        write_event(line(kept))
        with elsewhere(other):
            statements.run(text("SELECT 1"))
        commit()
    assert committed(kept) == 1
    other.dispose()
