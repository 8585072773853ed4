"""A key's recent requests, in process: what the key door's hook keeps of each request (and of
which nothing), the batches that write them - each key cut to its newest KEEP, a refused value
given to the key it belongs to with the reason or dropped as nobody's - and the recorder that holds
them between batches (bounded, written by a thread of its own, a failed batch dropped and logged)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.core.extensions import db
from app.models import KeyRequest, User
from app.models.base import new_uuid, sha256_hex, utcnow
from app.services.apikeys import revoke_key, rotate_key
from app.services.key_activity import entry, recent, refused_value_digest, save
from app.services.members import suspend_member
from app.web import key_activity as edge
from tests.api_support import make_catalog
from tests.key_support import key_header, make_key, make_roster, make_workspace_key


@pytest.fixture
def recorder(app):
    """The test app's recorder (no thread: KEY_ACTIVITY_FLUSH_SECONDS is 0 in the test process),
    emptied before and after."""
    chosen = edge.recorder(app)
    chosen.pending.clear()
    yield chosen
    chosen.pending.clear()


def rows(key_id: str | None = None) -> list[KeyRequest]:
    db.session.expire_all()
    statement = select(KeyRequest).order_by(KeyRequest.id)
    if key_id is not None:
        statement = statement.where(KeyRequest.key_id == key_id)
    return list(db.session.scalars(statement))


def answered(key_id: str | None, n: int, status: int = 200, digest: str | None = None, message: str | None = None):
    return entry(key_id, "api", "GET", f"/v1/roles/{n}", status, f"req-{n}", message, digest=digest)


def test_a_batch_keeps_each_keys_newest_and_leaves_the_others_alone():
    a, _ = make_key(name="A")
    b, _ = make_key(name="B")
    save([answered(a.id, n) for n in range(4)] + [answered(b.id, 100)], keep=3)
    db.session.commit()
    assert [r.request_id for r in rows(a.id)] == ["req-1", "req-2", "req-3"]
    save([answered(a.id, 4), answered(a.id, 5)], keep=3)
    db.session.commit()
    assert [r.request_id for r in rows(a.id)] == ["req-3", "req-4", "req-5"]
    assert [r.request_id for r in rows(b.id)] == ["req-100"]  # another key's are not cut
    assert [r.request_id for r in recent(a, 2)] == ["req-5", "req-4"]  # newest first
    assert [r.path for r in recent(a, 10)] == ["/v1/roles/5", "/v1/roles/4", "/v1/roles/3"]


def test_a_deleted_keys_entries_are_dropped_without_failing_the_batch():
    key, _ = make_key()
    save([answered(new_uuid(), 1), answered(key.id, 2)], keep=10)
    db.session.commit()
    assert [(r.key_id, r.request_id) for r in rows()] == [(key.id, "req-2")]


def test_a_refused_value_goes_to_its_key_with_the_reason_or_nowhere():
    revoked, revoked_value = make_key(name="Revoked")
    paused, paused_value = make_key(name="Paused")
    rotated, old_value = make_key(name="Rotated")
    live, live_value = make_key(name="Live")
    revoke_key(revoked)
    suspend_member(db.session.get(User, paused.owner_id))
    rotate_key(rotated, timedelta(hours=1))
    rotated.previous_expires_at = utcnow() - timedelta(seconds=1)  # its grace is over
    db.session.commit()
    mistyped = live_value[:-1] + ("A" if live_value[-1] != "A" else "B")
    values = [revoked_value, paused_value, old_value, live_value, mistyped, "msk_" + "z" * 43]
    save(
        [answered(None, n, 401, refused_value_digest(v), "Unauthorized") for n, v in enumerate(values)],
        keep=10,
    )
    db.session.commit()
    assert [(r.key_id, r.request_id, r.status, r.message) for r in rows()] == [
        (revoked.id, "req-0", 401, "Unauthorized — the key is revoked"),
        (paused.id, "req-1", 401, "Unauthorized — the key is paused: its owner's account is suspended"),
        (rotated.id, "req-2", 401, "Unauthorized — a previous value of the key, no longer valid since it was rotated"),
        # Refused then, taken now (its owner's suspension lifted in between, say): still its own.
        (live.id, "req-3", 401, "Unauthorized — the key did not work at the time"),
    ]  # the mistyped value and the made-up one are nobody's: no row
    stored = " ".join(f"{r.message} {r.path} {r.request_id}" for r in rows())
    assert not any(v in stored or sha256_hex(v) in stored for v in values)


def test_only_a_keys_shape_is_kept_of_a_refused_value():
    assert refused_value_digest(None) is None and refused_value_digest("") is None
    assert refused_value_digest("not a key") is None and refused_value_digest("msk_short") is None
    value = "mpk_" + "a" * 43
    assert refused_value_digest(value) == sha256_hex(value)


def test_the_door_hook_keeps_what_each_request_did(app, recorder):
    client = app.test_client()
    key, value = make_key()
    other, other_value = make_key(name="Other")
    revoke_key(other)
    db.session.commit()
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    assert client.get("/v1/search/autocomplete?q=secretword", headers=key_header(value)).status_code == 200
    assert client.get("/v1/profile/x/credits", headers=key_header(value)).status_code == 404
    assert client.post("/v1/search", json={"keyword": " "}, headers=key_header(value)).status_code == 400
    assert client.get("/v1/roles", headers=key_header(other_value)).status_code == 401
    assert client.get("/v1/roles", headers=key_header("not a key")).status_code == 401  # not even a key's shape
    assert client.get("/v1/roles").status_code == 401  # no key at all
    assert client.options("/v1/roles", headers=key_header(value)).status_code in (200, 204)  # a preflight
    assert client.get("/embed/v1/widget.js", headers=key_header(value)).status_code == 200  # the script
    pending = list(recorder.pending)
    assert [(e.key_id, e.path, e.status, e.message) for e in pending] == [
        (key.id, "/v1/roles", 200, None),
        (key.id, "/v1/search/autocomplete", 200, None),  # no query string
        (key.id, "/v1/profile/x/credits", 404, "Not found"),
        (key.id, "/v1/search", 400, "Invalid parameters supplied (keyword)"),  # the body is not kept
        (None, "/v1/roles", 401, "Unauthorized"),  # whose: found when written
    ]
    assert pending[4].digest == sha256_hex(other_value) and other_value not in repr(pending)
    assert rows() == []  # nothing written on the requests' time
    assert recorder.flush() == 5
    assert [(r.key_id, r.status) for r in rows()] == [
        (key.id, 200),
        (key.id, 200),
        (key.id, 404),
        (key.id, 400),
        (other.id, 401),
    ]
    assert recorder.flush() == 0


def test_a_workspace_keys_requests_are_not_kept(app, recorder):
    """Its page is its member's account page, which lists no requests: nothing to keep them for."""
    catalog = make_catalog(credits=1)
    _, value = make_workspace_key(make_roster(profiles=(catalog.mine,)))
    client = app.test_client()
    assert client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value)).status_code == 200
    assert client.get("/v1/roles", headers=key_header(value)).status_code == 403
    assert list(recorder.pending) == []


def test_keep_zero_records_nothing(app, recorder, monkeypatch):
    monkeypatch.setattr(recorder, "keep", 0)
    _, value = make_key()
    assert app.test_client().get("/v1/roles", headers=key_header(value)).status_code == 200
    assert list(recorder.pending) == []


def test_with_no_interval_an_entry_is_written_once_its_answer_is_sent(app, recorder):
    key, value = make_key()
    response = app.test_client().get("/v1/roles", headers=key_header(value))
    assert rows() == []  # the answer is not sent yet (the test client never closes it)
    response.close()  # what the server does once the body is out
    assert [(r.key_id, r.path) for r in rows()] == [(key.id, "/v1/roles")]


def test_a_process_holds_at_most_pending_limit_entries(app, monkeypatch):
    monkeypatch.setattr(edge, "PENDING_LIMIT", 3)
    chosen = edge.Recorder(app)
    chosen.interval = 0
    for n in range(5):
        chosen.add(answered("k", n))
    assert [e.request_id for e in chosen.pending] == ["req-2", "req-3", "req-4"]  # the oldest went first


def test_a_forked_worker_starts_afresh(app):
    chosen = edge.Recorder(app)
    chosen.interval = 0
    chosen.add(answered("k", 1))
    chosen.pid = -1  # as a worker forked from this process sees its parent's recorder
    chosen.add(answered("k", 2))
    assert [e.request_id for e in chosen.pending] == ["req-2"]  # the parent's entries are the parent's to write


def test_a_failed_batch_is_logged_and_dropped(app, recorder, monkeypatch, caplog):
    key, _ = make_key()

    def broken(entries, keep):
        raise RuntimeError("database away")

    recorder.add(answered(key.id, 1))
    monkeypatch.setattr(edge, "save", broken)
    with caplog.at_level(logging.WARNING, logger="app.web.key_activity"):
        assert recorder.flush() == 0
    assert "1 entries not written: RuntimeError" in caplog.text
    assert list(recorder.pending) == []
    monkeypatch.undo()
    recorder.add(answered(key.id, 2))
    assert recorder.flush() == 1
    assert [r.request_id for r in rows(key.id)] == ["req-2"]


def test_the_thread_writes_what_the_process_holds(app):
    key, _ = make_key()
    chosen = edge.Recorder(app)
    chosen.interval = 0.05
    try:
        chosen.add(answered(key.id, 1))
        assert chosen.thread is not None and chosen.thread.name == "key-activity"
        deadline = time.monotonic() + 60  # a wait, not a timing: the row must come
        while not rows(key.id) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [r.request_id for r in rows(key.id)] == ["req-1"]
    finally:
        chosen.stop()
    assert not chosen.thread.is_alive()
