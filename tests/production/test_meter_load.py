"""The meter under concurrent load on PostgreSQL: two connections counting one key's day never wait
on each other's row lock, and a worker killed while serving loses no call whose answer was sent
and counts none twice (bench/meter_load.py runs the same at the scale plan's rate for a minute)."""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from datetime import date
from pathlib import Path

import requests
from sqlalchemy import func, select, text

from app.core.extensions import db
from app.models import ApiUsage
from app.store import store
from app.store.statements import run
from app.store.unit_of_work import commit
from tests.key_support import make_key
from tests.production.servers import requires_postgres, running

pytestmark = requires_postgres


def metered(key_id: str) -> int:
    db.session.expire_all()
    return int(db.session.scalar(select(func.coalesce(func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == key_id)))


def test_a_count_never_waits_on_a_row_another_transaction_holds(app):
    """A transaction that has counted a key's day and not yet committed holds that row's lock; a
    second connection counting the same key and day must not wait for it. The second one's
    transaction refuses to wait at all (lock_timeout): on one shared row it would fail."""
    key, _ = make_key("secret", plan="scale")
    day = date(2026, 11, 27)
    with app.app_context():
        run(text("SET LOCAL lock_timeout = '30s'"))  # a first write: what follows is in this transaction
        store().meter.count(key.id, day)  # counted, uncommitted: the row stays locked
        with app.app_context():  # another request: a connection of its own
            run(text("SET LOCAL lock_timeout = '1ms'"))
            store().meter.count(key.id, day)  # would raise LockNotAvailable on the same row
            commit()
        commit()
    assert metered(key.id) == 2
    shards = db.session.scalars(select(ApiUsage.shard).where(ApiUsage.key_id == key.id)).all()
    assert len(shards) == 2 and 0 not in shards  # one shard per connection, numbered by its backend


def test_a_count_made_before_any_write_is_committed_at_once(app):
    """Before the request has written, a count is a transaction of its own: another connection sees
    it at once, before the request ends (so an answer sent after it was counted, whatever becomes of
    the process)."""
    key, _ = make_key("secret", plan="scale")
    with app.app_context():
        store().meter.count(key.id, date(2026, 11, 27))
        with db.engine.connect() as other:
            seen = other.scalar(select(func.sum(ApiUsage.count)).where(ApiUsage.key_id == key.id))
        assert seen == 1
        db.session.rollback()  # the request ends without committing: the count stands
    assert metered(key.id) == 1


def workers_of(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_a_worker_killed_mid_load_loses_no_answered_call_and_doubles_none(settings, tmp_path):
    key, value = make_key("secret", plan="scale")
    # Enterprise limits far above what six clients can ask: the test is about the meter, and a
    # server fast enough to pass the scale plan's 100 a second must not turn calls into 429s.
    store().api_keys.change(key, {"custom_per_second": 10_000, "custom_per_minute": 600_000})
    commit()
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    answered = threading.Semaphore(0)
    per_client, clients = 30, 6

    with running(settings, tmp_path, workers=2, threads=2) as server:

        def client() -> None:
            session = requests.Session()
            for _ in range(per_client):
                try:
                    status = session.get(server("/v1/roles"), headers={"x-api-key": value}, timeout=60).status_code
                    outcome = str(status)
                except requests.RequestException:
                    outcome = "unanswered"
                    session = requests.Session()
                with lock:
                    outcomes[outcome] += 1
                answered.release()

        threads = [threading.Thread(target=client) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for _ in range(per_client * clients // 2):  # half the calls answered: kill a worker mid-load
            answered.acquire()
        os.kill(workers_of(server.proc.pid)[0], signal.SIGKILL)
        for thread in threads:
            thread.join()
        after = requests.get(server("/v1/roles"), headers={"x-api-key": value}, timeout=60)
        assert after.status_code == 200  # the other worker (and the respawned one) still serve

    ok, unanswered = outcomes["200"] + 1, outcomes["unanswered"]
    assert set(outcomes) <= {"200", "unanswered"}, outcomes  # no 5xx, no refusal
    total = metered(key.id)
    assert total >= ok, (total, outcomes)  # every answered call was counted before its answer left
    assert total <= ok + unanswered, (total, outcomes)  # only an unanswered one may have been counted
