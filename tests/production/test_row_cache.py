"""Apps kept between requests on PostgreSQL (app/store/row_cache.py): a copy is used only
while the database vouches for it, so a change to an app counts from the next request on, in this
process and in every other, however it was made."""

from __future__ import annotations

import base64
import logging
import time

import psycopg
import pytest
from sqlalchemy import update

from app import create_app
from app.core.config import ConfigError
from app.core.extensions import db
from app.models import Client, User
from app.models.base import sha256_hex
from app.services.apikeys import find_key, revoke_key
from app.services.members import suspend_member, unsuspend_member
from app.services.registration import rotate_secret
from app.store import row_cache as cache_module
from app.store import store
from app.store.row_cache import CHANNEL, EXTENSION, RowCache
from tests.conftest import NOTICE_DELIVERED
from tests.factories import make_client, make_member
from tests.flows import RelyingParty, sign_in
from tests.integration.test_query_counts import Member
from tests.key_support import key_header, make_key
from tests.production.servers import TEST_DATABASE_URL, requires_postgres, running

pytestmark = requires_postgres


@pytest.fixture(scope="module")
def served(settings):
    """A second app over the test database, as in test_query_counts: each request of its test
    client gets an application context of its own, as under the production server."""
    return create_app({k: v for k, v in settings.items() if not k.startswith("_")})


def libpq_params() -> dict:
    url = TEST_DATABASE_URL.replace("postgresql+psycopg://", "postgresql://")
    return {"conninfo": url, "autocommit": True}


def as_an_operator(sql: str, **params) -> None:
    """A change made outside the provider: another connection, as psql would make it."""
    with psycopg.connect(**libpq_params()) as conn:
        conn.execute(sql, params)


def cache(app) -> RowCache:
    return app.extensions[EXTENSION]


def refresh_status(member: Member, refresh_token: str) -> tuple[int, dict]:
    response = member.refresh(refresh_token)
    return response.status_code, response.get_json()


# -- the migration's trigger --------------------------------------------------------------------


def test_a_statement_that_changes_or_deletes_apps_sends_a_notice_when_it_commits():
    client, _ = make_client()
    with psycopg.connect(**libpq_params()) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        with psycopg.connect(**libpq_params()) as writer:
            with writer.transaction():
                writer.execute("UPDATE clients SET name = 'Renamed' WHERE id = %s", (client.id,))
                assert list(listener.notifies(timeout=0.2, stop_after=1)) == []  # not before the commit
            assert [n.channel for n in listener.notifies(timeout=5, stop_after=1)] == [CHANNEL]
            with writer.transaction(force_rollback=True):
                writer.execute("DELETE FROM clients WHERE id = %s", (client.id,))
            assert list(listener.notifies(timeout=0.2, stop_after=1)) == []  # rolled back: no notice
            writer.execute("DELETE FROM clients WHERE id = %s", (client.id,))
            assert [n.channel for n in listener.notifies(timeout=5, stop_after=1)] == [CHANNEL]


# -- in this process ------------------------------------------------------------------------------


def test_an_exchange_keeps_its_app_and_the_next_request_uses_the_copy(served):
    m = Member(served)
    first = m.exchange(*m.sign_in()).get_json()
    kept = cache(served).get(("client_id", m.client_id))
    assert kept is not None and kept.client_id == m.client_id
    assert refresh_status(m, first["refresh_token"])[0] == 200


def test_a_secret_replaced_by_the_console_stops_working_at_the_next_request(served):
    m = Member(served)
    tokens = m.exchange(*m.sign_in()).get_json()
    assert cache(served).get(("client_id", m.client_id)) is not None
    with served.app_context():  # this process's own write drops the copy before any notice
        new_secret = rotate_secret(store().apps.registered(m.client_id))
        db.session.commit()

    status, body = refresh_status(m, tokens["refresh_token"])
    assert (status, body["error"]) == (401, "invalid_client")
    m.basic = {"Authorization": "Basic " + base64.b64encode(f"{m.client_id}:{new_secret}".encode()).decode()}
    assert refresh_status(m, tokens["refresh_token"])[0] == 200


def test_an_app_disabled_through_the_orm_is_refused_at_the_next_request(served):
    m = Member(served)
    tokens = m.exchange(*m.sign_in()).get_json()
    with served.app_context():  # as above: the server's own write, not another process's notice
        db.session.execute(update(Client).where(Client.client_id == m.client_id).values(status="disabled"))
        db.session.commit()
    status, body = refresh_status(m, tokens["refresh_token"])
    assert status == 401 and body["error"] == "invalid_client"


def test_a_change_this_process_writes_drops_the_copies_before_any_notice(served):
    """No notice comes before the commit: the write itself drops the copies, whether the ORM
    flushes a changed row or a statement changes it."""
    m = Member(served)
    m.exchange(*m.sign_in())
    with served.app_context():
        assert cache(served).get(("client_id", m.client_id)) is not None
        row = db.session.scalar(db.select(Client).where(Client.client_id == m.client_id))
        row.name = "Flushed"
        db.session.flush()
        assert cache(served).get(("client_id", m.client_id)) is None
        db.session.rollback()
    m = Member(served)
    m.exchange(*m.sign_in())
    with served.app_context():
        assert cache(served).get(("client_id", m.client_id)) is not None
        db.session.execute(update(Client).where(Client.client_id == m.client_id).values(name="Updated"))
        assert cache(served).get(("client_id", m.client_id)) is None
        db.session.rollback()


def test_a_read_inside_a_transaction_is_not_kept_and_a_rollback_leaves_the_committed_app(served):
    """A request that has written reads its own uncommitted change; that change must not become
    the process's copy, since it may yet be rolled back (and then no notice ever comes)."""
    m = Member(served)
    m.exchange(*m.sign_in())
    with served.test_request_context("/"):
        db.session.execute(update(Client).where(Client.client_id == m.client_id).values(name="Not yet"))
        assert store().apps.by_client_id(m.client_id).name == "Not yet"
        assert cache(served).get(("client_id", m.client_id)) is None
        db.session.rollback()
    with served.test_request_context("/"):
        assert store().apps.by_client_id(m.client_id).name == "Test App"
    assert cache(served).get(("client_id", m.client_id)).name == "Test App"


# -- made elsewhere -------------------------------------------------------------------------------


def test_a_change_made_by_another_connection_reaches_the_next_request(served):
    m = Member(served)
    tokens = m.exchange(*m.sign_in()).get_json()
    assert cache(served).get(("client_id", m.client_id)) is not None
    as_an_operator("UPDATE clients SET status = 'disabled' WHERE client_id = %(c)s", c=m.client_id)
    time.sleep(NOTICE_DELIVERED)
    status, body = refresh_status(m, tokens["refresh_token"])
    assert status == 401 and body["error"] == "invalid_client"


def end_listening_connection(kept: RowCache) -> None:
    """End the cache's listening connection from the server's side, as a restart would, and wait
    until its backend is gone (its socket closed)."""
    assert kept._listener is not None
    pid = kept._listener.info.backend_pid
    with psycopg.connect(**libpq_params()) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_a_change_made_while_nobody_listens_still_reaches_the_next_request(settings, caplog):
    """Notices sent while the listening connection is down are lost: the lookup that finds it
    lost uses no copy. (An app of its own: the lost connection is not tried again for a while.)"""
    own = create_app({k: v for k, v in settings.items() if not k.startswith("_")})
    m = Member(own)
    tokens = m.exchange(*m.sign_in()).get_json()
    assert cache(own).get(("client_id", m.client_id)) is not None
    end_listening_connection(cache(own))
    as_an_operator("UPDATE clients SET status = 'disabled' WHERE client_id = %(c)s", c=m.client_id)

    with caplog.at_level(logging.WARNING, logger=cache_module.__name__):
        status, body = refresh_status(m, tokens["refresh_token"])
    assert status == 401 and body["error"] == "invalid_client"
    assert any("was lost" in r.getMessage() for r in caplog.records)
    cache(own).close()


def test_after_a_loss_a_new_listening_connection_waits_a_while_and_starts_from_nothing(served, kept_app, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(cache_module.time, "monotonic", clock.monotonic)
    fresh = RowCache(cache(served)._connect, seconds=60)
    try:
        fresh.get(("id", 0))
        fresh.keep(kept_app, fresh.generation, ("id", kept_app.id))
        end_listening_connection(fresh)
        assert fresh.get(("id", kept_app.id)) is None  # lost
        fresh.keep(kept_app, fresh.generation, ("id", kept_app.id))
        assert fresh.get(("id", kept_app.id)) is None  # nothing is kept while nobody listens
        clock.now += cache_module.RECONNECT_SECONDS - 1
        assert fresh.get(("id", kept_app.id)) is None and fresh._listener is None  # not tried yet
        clock.now += 1
        assert fresh.get(("id", kept_app.id)) is None and fresh._listener is not None  # back, empty
        fresh.keep(kept_app, fresh.generation, ("id", kept_app.id))
        assert fresh.get(("id", kept_app.id)) is kept_app
    finally:
        fresh.close()


def test_two_servers_see_an_app_disabled_elsewhere(settings, tmp_path_factory):
    """Two processes (serve.py) keep the app; the test process, a third, disables it."""
    logs = tmp_path_factory.mktemp("app-cache")
    member = make_member()
    client, secret = make_client()
    with running(settings, logs) as a, running(settings, logs) as b:
        rp = {server: RelyingParty(server.url, client.client_id, secret) for server in (a, b)}
        refresh_tokens = {}
        for server in (a, b):
            params, _ = sign_in(server.url, rp[server], member.email, scope="openid offline_access")
            response = rp[server].exchange(params["code"])
            assert response.status_code == 200, response.text
            refresh_tokens[server] = response.json()["refresh_token"]

        db.session.execute(update(Client).where(Client.id == client.id).values(status="disabled"))
        db.session.commit()
        time.sleep(NOTICE_DELIVERED)
        for server in (a, b):
            response = rp[server].refresh(refresh_tokens[server])
            assert response.status_code == 401 and response.json()["error"] == "invalid_client", response.text


# -- the copies' own rules ----------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def kept_app(served):
    m = Member(served)
    m.exchange(*m.sign_in())
    kept = cache(served).get(("client_id", m.client_id))
    assert kept is not None
    return kept


def test_a_copy_is_used_no_longer_than_app_cache_seconds(served, kept_app, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(cache_module.time, "monotonic", clock.monotonic)
    fresh = RowCache(cache(served)._connect, seconds=60)
    try:
        fresh.get(("id", 0))  # listening from now on
        fresh.keep(kept_app, fresh.generation, ("id", kept_app.id))
        clock.now += 59
        assert fresh.get(("id", kept_app.id)) is kept_app
        clock.now += 2
        assert fresh.get(("id", kept_app.id)) is None
    finally:
        fresh.close()


def test_a_read_that_began_before_a_drop_is_not_kept(served, kept_app):
    fresh = RowCache(cache(served)._connect, seconds=60)
    try:
        fresh.get(("id", 0))
        generation = fresh.generation
        fresh.forget()  # a change seen while the row was being read
        fresh.keep(kept_app, generation, ("client_id", kept_app.client_id))
        assert fresh.get(("client_id", kept_app.client_id)) is None
        fresh.keep(kept_app, fresh.generation, ("client_id", kept_app.client_id))
        assert fresh.get(("client_id", kept_app.client_id)) is kept_app
    finally:
        fresh.close()


def test_without_the_migrations_trigger_nothing_is_kept(served, kept_app, monkeypatch, caplog):
    """A database without one of the triggers would never send its notices: the cache stays off."""
    monkeypatch.setattr(cache_module, "TRIGGERS", {**cache_module.TRIGGERS, "users": "no_such_trigger"})
    fresh = RowCache(cache(served)._connect, seconds=60)
    with caplog.at_level(logging.WARNING, logger=cache_module.__name__):
        fresh.keep(kept_app, fresh.generation, ("id", kept_app.id))
        assert fresh.get(("id", kept_app.id)) is None
    assert fresh._listener is None
    assert any("no no_such_trigger trigger" in r.getMessage() for r in caplog.records)


def test_a_forked_process_does_not_read_its_parents_notices(served, kept_app, monkeypatch):
    fresh = RowCache(cache(served)._connect, seconds=60)
    try:
        fresh.get(("id", 0))
        fresh.keep(kept_app, fresh.generation, ("id", kept_app.id))
        parent_socket = fresh._listener
        monkeypatch.setattr(cache_module.os, "getpid", lambda: -1)
        assert fresh.get(("id", kept_app.id)) is None  # the parent's copies are gone with its socket
        assert fresh._listener is not parent_socket
    finally:
        monkeypatch.undo()
        fresh.close()


# -- settings ---------------------------------------------------------------------------------------


def test_app_cache_seconds_zero_reads_the_app_on_every_request(settings):
    off = create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, "APP_CACHE_SECONDS": 0})
    assert EXTENSION not in off.extensions


def test_a_negative_app_cache_seconds_stops_the_start(settings):
    with pytest.raises(ConfigError, match="APP_CACHE_SECONDS"):
        create_app({**{k: v for k, v in settings.items() if not k.startswith("_")}, "APP_CACHE_SECONDS": -1})


# -- the keys requests present --------------------------------------------------------------------


def test_a_change_to_a_key_or_to_a_member_sends_a_notice_and_a_new_member_does_not():
    owner = make_member(role="developer")
    key, _ = make_key(owner=owner, funded=False)
    with psycopg.connect(**libpq_params()) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        with psycopg.connect(**libpq_params()) as writer:
            writer.execute("UPDATE api_keys SET name = 'Renamed' WHERE id = %s", (key.id,))
            assert [n.channel for n in listener.notifies(timeout=5, stop_after=1)] == [CHANNEL]
            writer.execute("UPDATE users SET role = 'member' WHERE id = %s", (owner.id,))
            assert [n.channel for n in listener.notifies(timeout=5, stop_after=1)] == [CHANNEL]
        make_member()  # an INSERT: no copy can be of a row that did not exist
        assert list(listener.notifies(timeout=0.2, stop_after=1)) == []


def roles_status(app, value: str) -> int:
    return app.test_client().get("/v1/roles", headers=key_header(value)).status_code


def kept_key(app, value: str):
    return cache(app).get(("api_key", sha256_hex(value)))


def test_a_key_door_request_keeps_the_key_with_its_owner_and_the_next_uses_the_copy(served):
    key, value = make_key()
    assert roles_status(served, value) == 200
    kept = kept_key(served, value)
    assert kept is not None and kept.id == key.id and kept.owner.email == key.owner.email
    assert roles_status(served, value) == 200
    assert kept_key(served, value) is kept


def test_a_key_revoked_on_the_console_is_refused_at_the_next_request(served):
    key, value = make_key()
    assert roles_status(served, value) == 200 and kept_key(served, value) is not None
    with served.app_context():
        revoke_key(find_key(key.id))  # this process's own write drops the copy before any notice
        assert kept_key(served, value) is None
        db.session.commit()
    assert roles_status(served, value) == 401


def test_a_suspended_owners_keys_pause_at_the_next_request_and_work_again_when_it_is_lifted(served):
    key, value = make_key()
    assert roles_status(served, value) == 200
    with served.app_context():
        owner = db.session.get(User, key.owner_id)
        suspend_member(owner)
        db.session.commit()
    assert roles_status(served, value) == 401
    with served.app_context():
        unsuspend_member(db.session.get(User, key.owner_id))
        db.session.commit()
    assert roles_status(served, value) == 200


def test_a_key_revoked_or_an_owner_demoted_elsewhere_is_refused_once_the_notice_is_in(served):
    key, value = make_key()
    assert roles_status(served, value) == 200 and kept_key(served, value) is not None
    as_an_operator("UPDATE api_keys SET revoked_at = now() WHERE id = %(k)s", k=key.id)
    time.sleep(NOTICE_DELIVERED)
    assert roles_status(served, value) == 401

    other, value = make_key()
    assert roles_status(served, value) == 200 and kept_key(served, value) is not None
    as_an_operator("UPDATE users SET role = 'member' WHERE id = %(u)s", u=other.owner_id)
    time.sleep(NOTICE_DELIVERED)
    assert roles_status(served, value) == 401  # a console key is a developer's: paused


def test_a_made_up_key_is_not_kept(served):
    assert roles_status(served, "msk_" + "x" * 43) == 401
    assert cache(served).get(("api_key", sha256_hex("msk_" + "x" * 43))) is None
