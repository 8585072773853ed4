"""The Core unit of work (app/store/database.py): a request that runs Core statements only (the token
endpoint at the front) runs them on one pooled connection and its transaction, without the ORM
session. What it commits stands; what it leaves uncommitted, or an exception leaves, is rolled
back; a write on any other connection meanwhile is refused, reads are not; `has_written` follows
it; a read before any write takes no second connection from the pool. On SQLite and, under
TEST_DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import event, func, select

from app.core.extensions import db
from app.models import AuditEvent, User
from app.models.base import new_uuid
from app.services.audit import EVENTS, event_row, write_event
from app.store.database import commit, core_unit_of_work, has_written, read_row, run_first


def an_address() -> str:
    return f"{new_uuid()}@unit-of-work.test"


def committed(address: str) -> int:
    """Audit lines for `address` that another connection sees: committed ones."""
    with db.engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(EVENTS).where(EVENTS.c.actor_email == address))


def line(address: str) -> dict[str, object]:
    return event_row("signin.failed", actor_email=address)


def test_what_it_commits_stands_and_what_it_leaves_is_rolled_back():
    kept, left = an_address(), an_address()
    with core_unit_of_work():
        write_event(line(kept))
        commit()
        write_event(line(left))  # a new transaction after the commit, never committed
        assert committed(left) == 0
    assert (committed(kept), committed(left)) == (1, 0)


def test_an_exception_leaves_nothing_written():
    address = an_address()
    with pytest.raises(LookupError), core_unit_of_work():
        write_event(line(address))
        raise LookupError("the request failed after its write")
    assert committed(address) == 0


def test_a_write_on_another_connection_is_refused_and_a_read_is_not():
    ours, other = an_address(), an_address()
    with core_unit_of_work():
        write_event(line(ours))
        assert db.session.scalar(select(func.count()).select_from(User)) == 0  # the session may read
        db.session.add(AuditEvent(**line(other)))
        with pytest.raises(RuntimeError, match="outside the request's unit of work"):
            db.session.flush()
        db.session.rollback()
        commit()
    assert (committed(ours), committed(other)) == (1, 0)


def test_has_written_follows_the_core_unit_of_work():
    with core_unit_of_work():
        assert not has_written()
        run_first(select(func.count()).select_from(EVENTS), {})
        assert not has_written()  # a read opens no transaction on the database
        write_event(line(an_address()))
        assert has_written()
        commit()
        assert not has_written()


def test_a_read_before_any_write_takes_no_second_connection():
    checkouts: list[object] = []
    listen = lambda *_args: checkouts.append(_args)  # noqa: E731
    event.listen(db.engine, "checkout", listen)
    try:
        with core_unit_of_work():
            assert read_row(select(func.count().label("n")).select_from(EVENTS), {}).n == 0
            write_event(line(an_address()))
            commit()
    finally:
        event.remove(db.engine, "checkout", listen)
    assert len(checkouts) == 1
