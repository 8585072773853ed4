"""The catalog can never starve the sign-in (issue 47): a catalog call's statements are bounded in
time and a timed-out call is a clear 503 in the envelope, never a 5xx and never metered; a
process runs at most CATALOG_SEARCH_CONCURRENCY catalog calls at once and refuses the next at once,
whatever way each call ends; a search counts CATALOG_SEARCH_WEIGHT requests of the key's budgets.
On both stores (TEST_DATABASE_URL for PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from flask import current_app
from sqlalchemy import text

from app.core.extensions import db
from app.models import ApiUsage
from app.services.catalog_guard import CatalogGuard, StatementTimeout
from app.store import store
from app.store.statements import run
from app.store.unit_of_work import unit_of_work
from app.web.api.catalog_guard import BUSY, EXTENSION, TOO_SLOW
from tests.api_support import make_catalog
from tests.key_support import index_catalog, key_header, make_key, make_roster, make_workspace_key

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py

# Runs until it is stopped: a count to a billion, one row at a time (either store).
SLOW = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) SELECT count(*) FROM n"
# Well past a millisecond on either store, and done in well under a second.
LONGER_THAN_A_MILLISECOND = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 300000) SELECT count(*) FROM n"
)


@pytest.fixture
def catalog():
    made = make_catalog(credits=12)
    index_catalog()
    return made


@contextmanager
def guard(slots: int = 1, bound_ms: int = 2000) -> Iterator[CatalogGuard]:
    """The app's catalog guard replaced by one with these settings for the block."""
    extensions = current_app.extensions
    before = extensions.get(EXTENSION)
    extensions[EXTENSION] = made = CatalogGuard(slots, bound_ms)
    try:
        yield made
    finally:
        if before is None:
            extensions.pop(EXTENSION, None)
        else:
            extensions[EXTENSION] = before


def meter(key) -> int:
    db.session.expire_all()
    return db.session.scalar(
        db.select(db.func.coalesce(db.func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == key.id)
    )


def slow_search(*_args, **_kwargs):
    """A search that never ends by itself, run through the store's statement path."""
    run(text(SLOW)).scalar()
    raise AssertionError("the slow statement was not stopped")


def assert_api_error(response, status: int, message: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert body == {"result": "error", "code": status, "message": message}
    return body


# -- the time bound -----------------------------------------------------------------------------------


def test_a_statement_past_the_bound_is_a_clear_503_with_retry_after_and_is_not_metered(client, catalog, monkeypatch):
    key, value = make_key(plan="scale")
    monkeypatch.setattr(type(store().catalog), "search", slow_search)
    with guard(bound_ms=50) as made:
        response = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
        assert made.searching == 0
    assert_api_error(response, 503, TOO_SLOW)
    assert response.headers["Retry-After"] == "2"
    assert "RateLimit-Remaining" in response.headers  # the call was admitted: its budget was spent
    assert meter(key) == 0  # nobody pays for our slowness
    # The connection and the unit of work are sound afterwards: the next call answers.
    monkeypatch.undo()
    with guard(bound_ms=50):
        assert client.get("/v1/roles", headers=key_header(value)).status_code == 200
    assert meter(key) == 1


def test_the_bound_stops_a_statement_inside_the_call_and_rolls_its_writes_back(app):
    from app.models import CreditRole

    with app.app_context(), guard(bound_ms=1) as made:  # a request of its own, as in production
        with pytest.raises(StatementTimeout), made.call(search=True):
            db.session.add(CreditRole(id=901, name="Written in the call"))
            db.session.flush()  # a write: the call's transaction is open
            run(text(LONGER_THAN_A_MILLISECOND)).scalar()
        assert made.searching == 0
    with app.app_context():  # the next request, outside any call: the same statement is not bounded
        assert run(text(LONGER_THAN_A_MILLISECOND)).scalar() == 300000
        assert db.session.get(CreditRole, 901) is None  # rolled back with the call


def test_the_sign_in_never_carries_the_bound(app):
    if db.engine.dialect.name != "postgresql":
        pytest.skip("statement_timeout is PostgreSQL's; SQLite's bound is checked above")
    with app.app_context():  # a catalog request: its own unit of work, as in production
        default = run(text("SHOW statement_timeout")).scalar()
        parallel = run(text("SHOW max_parallel_workers_per_gather")).scalar()
        assert parallel != "0"
        with guard(bound_ms=1234) as made, made.call(search=True):
            assert run(text("SHOW statement_timeout")).scalar() == "1234ms"
            assert run(text("SHOW max_parallel_workers_per_gather")).scalar() == "0"  # one core a search
            assert run(text("SHOW plan_cache_mode")).scalar() == "force_custom_plan"  # planned for its keyword
    with app.app_context():  # the next request to take the connection, unbounded (a sign-in)
        assert run(text("SHOW statement_timeout")).scalar() == default
        assert run(text("SHOW max_parallel_workers_per_gather")).scalar() == parallel
        assert run(text("SHOW plan_cache_mode")).scalar() == "auto"  # the sign-in keeps its generic plans
    with app.app_context():  # ... and a catalog call inside an open transaction bounds it alone
        run(text("UPDATE credit_roles SET name = name WHERE id < 0"))
        with guard(bound_ms=4321) as made, made.call(search=True):
            assert run(text("SHOW statement_timeout")).scalar() == "4321ms"
            assert run(text("SHOW max_parallel_workers_per_gather")).scalar() == "0"
            assert run(text("SHOW plan_cache_mode")).scalar() == "force_custom_plan"
        unit_of_work().rollback()
        assert run(text("SHOW plan_cache_mode")).scalar() == "auto"
        assert run(text("SHOW statement_timeout")).scalar() == default
        assert run(text("SHOW max_parallel_workers_per_gather")).scalar() == parallel


def test_no_bound_when_the_setting_is_zero(app):
    with guard(bound_ms=0) as made, made.call(search=True):
        assert run(text(LONGER_THAN_A_MILLISECOND)).scalar() == 300000


# -- the slots ----------------------------------------------------------------------------------------


def test_a_search_finding_every_slot_taken_is_refused_at_once_without_spending_or_metering(client, catalog):
    key, value = make_key(plan="scale")
    with guard(slots=1) as made:
        with made.call(search=True):  # another thread's search, holding the process's one slot
            response = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
            assert_api_error(response, 503, BUSY)
            assert response.headers["Retry-After"] == "1"
            assert "RateLimit-Remaining" not in response.headers  # refused before the key's budget
            assert made.searching == 1
            # A lookup takes no slot: it is answered beside the search.
            lookup = client.get(f"/v1/profile/{catalog.other}", headers=key_header(value))
            assert lookup.status_code == 200 and lookup.headers["RateLimit-Remaining"] == "5999"
        after = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
    assert after.status_code == 200
    assert after.headers["RateLimit-Remaining"] == "5989"  # the busy refusal spent nothing
    assert meter(key) == 2


def test_the_slot_is_given_back_however_the_search_ends(client, catalog, monkeypatch):
    _key, value = make_key(plan="scale")
    _workspace, workspace_value = make_workspace_key(make_roster(profiles=(catalog.other,)))

    def search(body, headers):
        return client.post("/v1/search", json=body, headers=headers).status_code

    with guard(slots=1, bound_ms=50) as made:
        outcomes = [
            search({"keyword": "ada"}, key_header("msk_" + "A" * 43)),  # unknown key
            search({"keyword": "ada"}, key_header("")),  # no key
            search({"keyword": ""}, key_header(value)),  # bad input
            search({"keyword": "ada"}, key_header(workspace_value)),  # a key that may not search
        ]
        monkeypatch.setattr(type(store().catalog), "search", slow_search)
        outcomes.append(search({"keyword": "ada"}, key_header(value)))  # past the time bound

        def crash(*_args, **_kwargs):
            raise RuntimeError("a bug in a read")

        monkeypatch.setattr(type(store().catalog), "search", crash)
        outcomes.append(search({"keyword": "ada"}, key_header(value)))  # a failure on our side
        assert outcomes == [401, 401, 400, 403, 503, 500]
        assert made.searching == 0
        monkeypatch.undo()
        assert search({"keyword": "ada"}, key_header(value)) == 200  # the slot is free


def test_the_sign_in_takes_no_slot(client, catalog):
    with guard(slots=1) as made, made.call(search=True):
        assert client.get("/.well-known/openid-configuration").status_code == 200
        assert client.get("/api/auth/jwks").status_code == 200


# -- the weight of a search ---------------------------------------------------------------------------


def test_a_search_counts_ten_requests_of_the_budget_and_one_on_the_meter(client, catalog):
    key, value = make_key(plan="scale")  # 100 a second, 6,000 a minute
    search = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
    assert search.status_code == 200
    assert search.headers["RateLimit-Remaining"] == "5990"
    lookup = client.get(f"/v1/profile/{catalog.other}", headers=key_header(value))
    assert lookup.headers["RateLimit-Remaining"] == "5989"
    autocomplete = client.get("/v1/search/autocomplete?q=ada", headers=key_header(value))
    assert autocomplete.headers["RateLimit-Remaining"] == "5988"
    assert meter(key) == 3  # a search is one call on the meter


def test_a_search_past_what_is_left_is_429_saying_what_a_search_counts(client, catalog):
    key, value = make_key()
    key.custom_per_minute = 25  # an enterprise key's own limit (app/services/billing/enterprise.py)
    db.session.commit()
    remaining = [
        client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value)).headers["RateLimit-Remaining"]
        for _ in range(2)
    ]
    assert remaining == ["15", "5"]
    refused = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
    assert refused.status_code == 429
    assert refused.get_json()["message"] == (
        "API rate limit exceeded: 25 per minute for this key (a search counts as 10 requests)"
    )
    assert int(refused.headers["Retry-After"]) >= 1 and refused.headers["RateLimit-Remaining"] == "0"
    assert meter(key) == 2


def test_a_search_never_counts_more_than_a_whole_window(client, catalog):
    key, value = make_key()
    key.custom_per_minute = 4
    db.session.commit()
    first = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
    assert first.status_code == 200 and first.headers["RateLimit-Remaining"] == "0"


def test_the_weight_is_a_setting(client, catalog, app):
    _key, value = make_key(plan="scale")
    app.config["CATALOG_SEARCH_WEIGHT"] = 3
    try:
        search = client.post("/v1/search", json={"keyword": "ada"}, headers=key_header(value))
    finally:
        app.config["CATALOG_SEARCH_WEIGHT"] = 10
    assert search.headers["RateLimit-Remaining"] == "5997"


def test_the_tool_servers_search_weighs_as_the_rest_search_and_its_timeout_is_a_refusal(app, catalog, monkeypatch):
    from flask import g

    from app.web.toolserver.callers import CALLER, KeyCaller
    from app.web.toolserver.server import _run
    from app.web.toolserver.tools import BY_NAME

    key, value = make_key(plan="scale")

    def tool_call() -> tuple[int, dict, int | None]:
        """One tool server request, in its own contexts as the door makes them."""
        with app.app_context(), app.test_request_context("/mcp", method="POST", headers=key_header(value)):
            token = CALLER.set(KeyCaller(db.session.get(type(key), key.id)))
            try:
                status, result = _run(BY_NAME["search"], {"keyword": "ada"})
            finally:
                CALLER.reset(token)
            window = g.get("api_window")
            return status, result, window.remaining if window else None

    status, result, remaining = tool_call()
    assert status == 200 and not result["isError"]
    assert remaining == 5990
    monkeypatch.setattr(type(store().catalog), "search", slow_search)
    with guard(bound_ms=50) as made:
        status, result, _ = tool_call()
        assert made.searching == 0
    assert status == 503 and result["isError"]
    assert result["structuredContent"]["code"] == 503
    assert result["structuredContent"]["retryAfter"] == 2
    assert result["structuredContent"]["message"].startswith(TOO_SLOW)
    assert meter(key) == 1


# -- the server's shared slots ------------------------------------------------------------------------


def test_shared_slots_are_shared_by_processes_and_threads_and_freed_when_a_holder_dies(tmp_path):
    import subprocess
    import sys
    import threading

    from app.core.slots import SharedSlots

    slots = SharedSlots(tmp_path, 2)
    first = slots.try_take()
    assert first is not None
    other_thread: list[int | None] = []
    thread = threading.Thread(target=lambda: other_thread.append(slots.try_take()))
    thread.start()
    thread.join()
    assert other_thread[0] is not None and other_thread[0] != first  # a second thread, the second slot
    assert slots.try_take() is None  # both taken
    slots.give_back(other_thread[0])
    # Another process (a worker) takes the freed slot and holds it until it dies.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from app.core.slots import SharedSlots; "
            f"s = SharedSlots(Path({str(tmp_path)!r}), 2); print(s.try_take(), s.try_take(), flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().split() == [str(other_thread[0]), "None"]  # one free slot, not two
        assert slots.try_take() is None  # the other process holds it
    finally:
        holder.kill()
        holder.wait()
    assert slots.try_take() == other_thread[0]  # the kernel freed it with the process


def test_two_first_searches_at_once_in_a_fresh_worker_give_their_slots_back(tmp_path, monkeypatch):
    """The slot files are opened once a process, by one thread: two threads opening them at once
    each opened a set, one set replaced the other under a held slot, and that slot was never
    given back (every search after it refused until the worker died)."""
    import os
    import threading
    import time

    from app.core import slots as slots_module
    from app.core.slots import SharedSlots

    real_open = os.open

    def slow_open(*args, **kwargs):  # opening takes a while: the second thread arrives meanwhile
        time.sleep(0.02)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(slots_module.os, "open", slow_open)
    slots = SharedSlots(tmp_path, 2)
    taken: list[int | None] = []

    def search() -> None:
        slot = slots.try_take()
        taken.append(slot)
        time.sleep(0.05)  # both searches run at once
        if slot is not None:
            slots.give_back(slot)

    threads = [threading.Thread(target=search) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    monkeypatch.undo()
    assert None not in taken
    other = SharedSlots(tmp_path, 2)  # another worker's view: both slots free again
    assert other.try_take() is not None and other.try_take() is not None


def test_a_guard_on_shared_slots_refuses_the_second_search(app, tmp_path):
    from app.services.catalog_guard import CatalogBusy

    one, two = CatalogGuard(1, 0, tmp_path), CatalogGuard(1, 0, tmp_path)  # two workers' guards
    with one.call(search=True):
        with pytest.raises(CatalogBusy), two.call(search=True):
            pass
        with two.call(search=False):  # a lookup takes no slot
            pass
    with two.call(search=True):
        assert two.searching == 1
