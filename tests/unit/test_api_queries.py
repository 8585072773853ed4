"""Efficient reads: a page costs the same few queries whatever its size or the catalog's, and the
lookups are served by indexes."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app.core.extensions import db
from app.services.catalog_seed import build_catalog, profiles_by_credit_count
from tests.api_support import bearer, count_queries, make_catalog, member_with_token


def queries_for(client, token, path) -> list[str]:
    with count_queries() as statements:
        response = client.get(path, headers=bearer(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    return statements


def test_a_page_costs_a_fixed_number_of_queries(client):
    catalog = make_catalog(credits=120)
    _, _, token = member_with_token("pro", catalog.mine)
    one = queries_for(client, token, "/v1/me/credits?limit=1")
    fifty = queries_for(client, token, "/v1/me/credits?limit=50")
    deep = queries_for(client, token, "/v1/me/credits?limit=50&offset=70")
    # token (with its app and member joined), count, page, roles, artists
    assert len(one) == len(fifty) == len(deep) == 5, fifty
    past_the_end = queries_for(client, token, "/v1/me/credits?offset=500")
    assert len(past_the_end) == 2  # token, count: nothing else to read
    assert len(queries_for(client, token, f"/v1/profile/{catalog.mine}/credits?limit=50")) == 5
    assert len(queries_for(client, token, "/v1/me")) == 2
    assert len(queries_for(client, token, "/v1/me/analytics")) == 2


def test_the_count_does_not_grow_with_the_catalog(client):
    build_catalog(seed=7, credits=3000)
    busiest = profiles_by_credit_count(1)[0]
    _, _, token = member_with_token("pro", busiest)
    page = client.get("/v1/me/credits?limit=50", headers=bearer(token)).get_json()["data"]
    assert page["totalCount"] > 100 and len(page["items"]) == 50
    assert len(queries_for(client, token, "/v1/me/credits?limit=50")) == 5
    assert len(queries_for(client, token, "/v1/me/credits?limit=50&offset=100")) == 5


def _plan(sql: str) -> str:
    rows = db.session.execute(text("EXPLAIN QUERY PLAN " + sql)).all()
    return " | ".join(str(row[-1]) for row in rows)


def test_the_page_lookups_use_indexes(app):
    if db.engine.dialect.name != "sqlite":
        pytest.skip("query plans are checked on SQLite (PostgreSQL picks plans by table statistics)")
    checks = {
        "page": "SELECT id FROM credits WHERE profile_id = 'p' ORDER BY release_date DESC, id DESC LIMIT 50 OFFSET 10",
        "count": "SELECT count(*) FROM credits WHERE profile_id = 'p'",
        "roles": "SELECT * FROM credit_role_links WHERE credit_id IN (1, 2, 3)",
        "artists": "SELECT * FROM track_artists WHERE track_id IN ('a', 'b')",
        "charts": "SELECT * FROM chart_rows WHERE profile_id = 'p'",
        "token": "SELECT * FROM tokens WHERE access_token_hash = 'x'",
    }
    for name, sql in checks.items():
        plan = _plan(sql)
        assert plan.startswith("SEARCH") and "SCAN" not in plan and "TEMP B-TREE" not in plan, (name, plan)
    assert "COVERING INDEX ix_credits_profile_release" in _plan(checks["page"])
