"""The catalog's reads on a database of their own (CATALOG_DATABASE_URL, app/store/catalog_database.py):
a key door call's view reads the catalog's engine and nothing else, while the key, the meter and
the sign-in stay on the main one; the catalog's engine never writes, its statements are bounded like
any catalog call's, and when it is down the catalog answers 503 and the sign-in goes on.

The catalog's engine is pointed at the test database itself (a replica holds the same rows): what
is asserted is which engine each statement went through."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from app import create_app
from app.core.config import ConfigError
from app.core.extensions import db
from app.store.catalog_database import catalog_engine, reading_the_catalog
from app.store.statements import run
from app.store.time_bound import StatementTimeout, bounded
from app.store.unit_of_work import unit_of_work
from tests.api_support import make_catalog
from tests.key_support import index_catalog, key_header, make_key
from tests.production.servers import TEST_DATABASE_URL, requires_postgres
from tests.tool_support import calls, metered, tool_servers

pytestmark = requires_postgres


def app_with(settings: dict, catalog_url: str):
    return create_app(
        {**{k: v for k, v in settings.items() if not k.startswith("_")}, "CATALOG_DATABASE_URL": catalog_url}
    )


@pytest.fixture(scope="module")
def replicated(settings):
    """A server whose catalog reads go to a database of their own (here: the same one)."""
    return app_with(settings, TEST_DATABASE_URL)


@contextmanager
def statements_of(engine) -> Iterator[list[str]]:
    """The SQL `engine` sends while the block runs."""
    sent: list[str] = []

    def note(_conn, _cursor, statement, *_rest) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", note)


def engines(app):
    with app.app_context():
        return db.engine, catalog_engine()


def test_a_key_door_call_reads_the_catalogs_database_and_counts_on_the_main_one(replicated):
    catalog = make_catalog(credits=3)
    index_catalog()
    key, value = make_key()
    main, replica = engines(replicated)
    with statements_of(main) as on_main, statements_of(replica) as on_replica:
        response = replicated.test_client().get(f"/v1/profile/{catalog.mine}", headers=key_header(value))
    assert response.status_code == 200 and response.get_json()["data"]["name"] == "Ada Mine"
    assert any("FROM profiles" in statement for statement in on_replica)
    assert not any("profiles" in statement for statement in on_main)  # the view read nothing there
    assert any("api_usage" in statement for statement in on_main)  # the meter's count
    assert not any("api_usage" in statement or "api_keys" in statement for statement in on_replica)
    assert metered(key.id) == 1


def test_a_search_and_a_page_read_the_catalogs_database(replicated):
    catalog = make_catalog(credits=12)
    index_catalog()
    _key, value = make_key()
    _main, replica = engines(replicated)
    client = replicated.test_client()
    with statements_of(replica) as on_replica:
        found = client.post("/v1/search", json={"keyword": "Ada Mine"}, headers=key_header(value))
        page = client.get(f"/v1/profile/{catalog.mine}/credits?limit=5", headers=key_header(value))
    assert found.status_code == 200 and found.get_json()["data"]["profiles"]["items"][0]["id"] == catalog.mine
    assert page.status_code == 200 and page.get_json()["data"]["totalCount"] == 12
    assert any("credits" in statement for statement in on_replica)


def test_the_catalogs_database_is_never_written(replicated):
    catalog = make_catalog(credits=1)
    with replicated.app_context():
        with reading_the_catalog(), pytest.raises(DBAPIError, match="read-only transaction"):
            run(text("UPDATE profiles SET name = 'Overwritten' WHERE id = :id"), {"id": catalog.mine})
    db.session.remove()
    assert db.session.scalar(text("SELECT name FROM profiles WHERE id = :id"), {"id": catalog.mine}) == "Ada Mine"


def test_the_request_gets_its_own_unit_of_work_and_session_back(replicated):
    with replicated.app_context():
        before, session = unit_of_work(), db.session()
        assert db.session.scalar(text("SELECT 1")) == 1  # the request's connection, opened
        with reading_the_catalog():
            assert unit_of_work() is not before and db.session() is not session
            assert unit_of_work().engine is catalog_engine()
        assert unit_of_work() is before and db.session() is session
        assert before.current is not None and not before.current.closed


def test_a_statement_on_the_catalogs_database_is_bounded(replicated):
    with replicated.app_context():
        with pytest.raises(StatementTimeout), bounded(50), reading_the_catalog():
            run(text("SELECT pg_sleep(2)"))
        with bounded(50), reading_the_catalog():
            assert run(text("SHOW statement_timeout")).scalar_one() == "50ms"


def test_a_catalog_database_that_is_down_answers_503_and_the_sign_in_goes_on(settings):
    catalog = make_catalog(credits=1)
    index_catalog()
    key, value = make_key()
    down = app_with(settings, "postgresql+psycopg://credits_id@127.0.0.1:1/nowhere")
    client = down.test_client()
    response = client.get(f"/v1/profile/{catalog.mine}", headers=key_header(value))
    assert response.status_code == 503 and "Retry-After" in response.headers
    assert "127.0.0.1:1" not in response.get_data(as_text=True)  # no address or driver message leaks
    assert metered(key.id) == 0  # our failure: not counted
    assert client.get("/.well-known/openid-configuration").status_code == 200
    ready = client.get("/readyz")  # the sign-in is ready; the catalog's database is reported down
    assert ready.status_code == 200 and ready.get_json()["status"] == "ok"
    assert ready.get_json()["catalog_database"] == {"ok": False, "error": "unavailable"}
    assert "127.0.0.1:1" not in ready.get_data(as_text=True)


def test_readiness_reports_the_catalogs_database_and_a_server_without_one_says_nothing(replicated, settings):
    body = replicated.test_client().get("/readyz").get_json()
    assert body["status"] == "ok"
    assert body["catalog_database"] == {"ok": True, "replica": False}  # the test database is a primary
    without = app_with(settings, "")
    assert "catalog_database" not in without.test_client().get("/readyz").get_json()


@pytest.mark.live
def test_the_tool_servers_tools_read_the_catalogs_database(app, settings, tmp_path_factory):
    """As production starts it (serve.py): with the catalog's database down, a tool answers the
    503 tool error and counts nothing, while the provider beside it still signs in."""
    catalog = make_catalog(credits=1)
    index_catalog()
    key, value = make_key()
    down = "postgresql+psycopg://credits_id@127.0.0.1:1/nowhere"
    with tool_servers(settings, tmp_path_factory.mktemp("catalog-down"), CATALOG_DATABASE_URL=down) as servers:
        [result] = calls(servers.mcp, value, [("get_profile", {"id_value": catalog.mine})])
        assert result.is_error and result.structured_content["code"] == 503
        discovery = requests.get(servers.rest + "/.well-known/openid-configuration", timeout=10)
        assert discovery.status_code == 200
    assert metered(key.id) == 0


def test_a_catalog_database_needs_postgresql_on_both_sides(settings):
    with pytest.raises(ConfigError, match="CATALOG_DATABASE_URL"):
        create_app(
            {
                **{k: v for k, v in settings.items() if not k.startswith("_")},
                "DATABASE_URL": "sqlite:///:memory:",
                "CATALOG_DATABASE_URL": TEST_DATABASE_URL,
            }
        )
