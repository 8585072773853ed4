"""A key's recent requests on its console page (issue 47 item 6, issue 50 item 8), over real HTTP
against the production server: answered calls and refusals with their reasons, for the key's owner
only; a revoked key's and a rotated-out value's refusals on the key's page, a mistyped key's on no
page; the path without its query string; never the key's value; the newest KEY_ACTIVITY_KEEP kept."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from html import unescape

import pytest
import requests
from sqlalchemy import func, select

from app.core.extensions import db
from app.models import KeyRequest
from app.models.base import utcnow
from app.services.apikeys import revoke_key, rotate_key
from tests.api_support import make_catalog
from tests.conftest import heard_elsewhere
from tests.factories import make_member
from tests.integration.console_support import signed_in
from tests.key_support import make_key
from tests.tool_support import calls, tool_servers

pytestmark = pytest.mark.live
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def call(live_server, value: str, path: str, method: str = "GET", **kw) -> requests.Response:
    return requests.request(method, live_server(path), headers={"x-api-key": value}, timeout=30, **kw)


def listed(html: str) -> list[list[str]]:
    """The rows of the page's recent-requests table, each as its cells' text."""
    table = re.search(r'<table class="key-requests">(.*?)</table>', html, re.S)
    if table is None:
        return []
    rows = re.findall(r"<tr class=\"(?:refused|answered)\">(.*?)</tr>", table.group(1), re.S)
    return [
        [" ".join(unescape(re.sub(r"<[^>]+>", " ", cell)).split()) for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
        for row in rows
    ]


def stored(key_id: str) -> list[KeyRequest]:
    db.session.remove()  # read afresh: the server wrote them
    return list(db.session.scalars(select(KeyRequest).where(KeyRequest.key_id == key_id).order_by(KeyRequest.id)))


def test_the_owner_sees_answers_and_refusals_with_their_reasons(live_server):
    catalog = make_catalog(credits=3)
    dev = make_member(role="developer")
    key, value = make_key(owner=dev)
    other_key, other_value = make_key(owner=dev, name="Other key")

    roles = call(live_server, value, "/v1/roles")
    profile = call(live_server, value, f"/v1/profile/{catalog.mine}")
    missing = call(live_server, value, "/v1/profile/00000000-0000-4000-8000-000000000000")
    too_big = call(live_server, value, f"/v1/profile/{catalog.mine}/credits", params={"limit": 500})
    typed = call(live_server, value, "/v1/search/autocomplete", params={"q": "moonlightsonata"})
    searched = call(live_server, value, "/v1/search", "POST", json={"keyword": "bluemoonrising"})
    no_route = call(live_server, value, "/v1/nowhere")
    assert [r.status_code for r in (roles, profile, missing, too_big, typed, searched, no_route)] == [
        200,
        200,
        404,
        400,
        200,
        200,
        404,
    ]
    call(live_server, other_value, "/v1/roles")  # the other key's, on its own page only

    page = signed_in(live_server.url, dev.email).get(f"/console/api-keys/{key.id}")
    assert page.status_code == 200
    rows = listed(page.text)
    assert [row[1:3] for row in rows] == [
        ["GET /v1/nowhere", "404"],
        ["POST /v1/search", "200"],
        ["GET /v1/search/autocomplete", "200"],
        [f"GET /v1/profile/{catalog.mine}/credits", "400"],
        ["GET /v1/profile/00000000-0000-4000-8000-000000000000", "404"],
        [f"GET /v1/profile/{catalog.mine}", "200"],
        ["GET /v1/roles", "200"],
    ]
    by_request = {row[4]: row for row in rows}
    assert by_request[too_big.headers["X-Request-Id"]][3] == "Too big page, max page size is 50 (limit)"
    assert by_request[missing.headers["X-Request-Id"]][3] == missing.json()["message"]
    assert by_request[roles.headers["X-Request-Id"]][3] == ""  # an answer has no reason
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", rows[0][0])
    # What was searched is not kept: neither the type-ahead's query string nor the search's body.
    assert "moonlightsonata" not in page.text and "bluemoonrising" not in page.text
    assert other_value[:8] not in " ".join(row[1] for row in rows)

    # The rows: this key's seven, the other key's one; no query, no key value, the request ids.
    mine = stored(key.id)
    assert [(r.method, r.path, r.status, r.surface) for r in mine][:2] == [
        ("GET", "/v1/roles", 200, "api"),
        ("GET", f"/v1/profile/{catalog.mine}", 200, "api"),
    ]
    assert {r.request_id for r in mine} == {
        r.headers["X-Request-Id"] for r in (roles, profile, missing, too_big, typed, searched, no_route)
    }
    assert [(r.path, r.status) for r in stored(other_key.id)] == [("/v1/roles", 200)]
    dumped = json.dumps([[str(getattr(r, c.name)) for c in KeyRequest.__table__.columns] for r in mine])
    assert value not in dumped and value[4:20] not in dumped and "moonlight" not in dumped and "?" not in dumped


def test_another_developer_cannot_see_a_keys_requests(live_server):
    owner = make_member(role="developer")
    key, value = make_key(owner=owner)
    assert call(live_server, value, "/v1/roles").status_code == 200
    stranger = signed_in(live_server.url, make_member(role="developer").email)
    refused = stranger.get(f"/console/api-keys/{key.id}")
    assert refused.status_code == 404 and "/v1/roles" not in refused.text
    admin = signed_in(live_server.url, make_member(role="admin").email)  # admins manage every key
    assert [row[1:3] for row in listed(admin.get(f"/console/api-keys/{key.id}").text)] == [["GET /v1/roles", "200"]]


def test_a_revoked_key_is_on_its_page_and_a_mistyped_key_on_none(live_server):
    dev = make_member(role="developer")
    key, value = make_key(owner=dev)
    assert call(live_server, value, "/v1/roles").status_code == 200
    revoke_key(key, actor=dev)
    db.session.commit()
    heard_elsewhere()  # the live server is another process
    revoked = call(live_server, value, "/v1/roles")
    assert revoked.status_code == 401 and revoked.json()["message"] == "Unauthorized"
    # One character off, and a well-formed value of no key: both refused alike at the door...
    mistyped_value = value[:-1] + ("A" if value[-1] != "A" else "B")
    mistyped = call(live_server, mistyped_value, "/v1/roles")
    made_up = call(live_server, "msk_" + "x" * 43, "/v1/roles")
    assert mistyped.status_code == made_up.status_code == 401
    assert mistyped.json()["message"] == made_up.json()["message"] == "Unauthorized"

    rows = listed(signed_in(live_server.url, dev.email).get(f"/console/api-keys/{key.id}").text)
    assert [row[1:4] for row in rows] == [
        ["GET /v1/roles", "401", "Unauthorized — the key is revoked"],
        ["GET /v1/roles", "200", ""],
    ]
    assert rows[0][4] == revoked.headers["X-Request-Id"]
    # ...but only the revoked key is anyone's: the others are on no page, in no row.
    strays = {mistyped.headers["X-Request-Id"], made_up.headers["X-Request-Id"]}
    db.session.remove()
    assert db.session.scalar(select(func.count()).where(KeyRequest.request_id.in_(strays))) == 0
    # No line of the server's log holds a key's value, the revoked one's or the mistyped one's.
    assert value not in live_server.log_text() and mistyped_value not in live_server.log_text()


def test_a_value_past_its_grace_is_named_on_the_keys_page_and_one_without_grace_on_none(live_server):
    dev = make_member(role="developer")
    key, old_value = make_key(owner=dev)
    new_value = rotate_key(key, timedelta(hours=1), actor=dev)
    key.previous_expires_at = utcnow() - timedelta(seconds=1)  # the grace is over
    db.session.commit()
    assert call(live_server, old_value, "/v1/roles").status_code == 401
    assert call(live_server, new_value, "/v1/roles").status_code == 200
    browser = signed_in(live_server.url, dev.email)
    assert len(listed(browser.get(f"/console/api-keys/{key.id}").text)) == 2
    # Rotated again without a grace: the value before is forgotten at once, as a mistyped one.
    newest = rotate_key(key, None, actor=dev)
    db.session.commit()
    forgotten = call(live_server, new_value, "/v1/roles")
    assert forgotten.status_code == 401
    assert call(live_server, newest, "/v1/roles").status_code == 200

    rows = listed(browser.get(f"/console/api-keys/{key.id}").text)
    assert [row[1:4] for row in rows] == [
        ["GET /v1/roles", "200", ""],
        ["GET /v1/roles", "200", ""],
        ["GET /v1/roles", "401", "Unauthorized — a previous value of the key, no longer valid since it was rotated"],
    ]
    assert forgotten.headers["X-Request-Id"] not in {row[4] for row in rows}


def test_the_newest_requests_are_kept_and_no_more(live_server, app):
    keep = app.config["KEY_ACTIVITY_KEEP"]
    dev = make_member(role="developer")
    key, value = make_key(owner=dev)
    ids = [call(live_server, value, "/v1/roles").headers["X-Request-Id"] for _ in range(keep + 5)]
    rows = listed(signed_in(live_server.url, dev.email).get(f"/console/api-keys/{key.id}").text)
    assert [row[4] for row in rows] == ids[::-1][:keep]  # the newest first, the five oldest gone
    assert [r.request_id for r in stored(key.id)] == ids[5:]


@pytest.fixture(scope="module")
def tool_server(app, settings, tmp_path_factory):
    with tool_servers(settings, tmp_path_factory.mktemp("key-activity-tools")) as running:
        yield running


def written(key_id: str, count: int) -> list[KeyRequest]:
    """The key's rows once the tool server's process has written `count` of them (it writes its
    batch every KEY_ACTIVITY_FLUSH_SECONDS: a wait for the rows, not a measure of it)."""
    deadline = time.monotonic() + 60
    while len(found := stored(key_id)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def test_tool_calls_are_on_the_keys_page_as_tool_calls(tool_server):
    make_catalog(credits=2)
    dev = make_member(role="developer")
    key, value = make_key(owner=dev)
    results = calls(tool_server.mcp, value, [("get_roles", {}), ("get_profile", {"id_value": "nobody"})])
    assert not results[0].is_error and results[1].is_error
    revoked, revoked_value = make_key(owner=dev, name="Revoked")
    revoke_key(revoked)
    db.session.commit()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_roles", "arguments": {}}}
    refused = requests.post(tool_server.mcp, json=body, headers={**MCP_HEADERS, "x-api-key": revoked_value}, timeout=30)
    assert refused.status_code == 401

    tool_rows = [r for r in written(key.id, 3) if r.tool in ("get_roles", "get_profile")]
    assert [(r.surface, r.method, r.path, r.tool, r.status, r.message) for r in tool_rows] == [
        ("tools", "POST", "/mcp", "get_roles", 200, None),
        ("tools", "POST", "/mcp", "get_profile", 404, "Not found"),
    ]
    assert all(r.surface == "tools" and r.tool for r in stored(key.id))  # the handshake: by its MCP method
    assert [(r.surface, r.tool, r.status, r.message) for r in written(revoked.id, 1)] == [
        ("tools", None, 401, "Unauthorized — the key is revoked")
    ]
    page = signed_in(tool_server.rest, dev.email).get(f"/console/api-keys/{key.id}")
    assert ["tool call get_roles (tool server)", "200"] in [row[1:3] for row in listed(page.text)]
