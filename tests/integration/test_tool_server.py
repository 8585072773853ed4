"""The hosted tool server over real HTTP, driven by the MCP SDK's own client against servers started
as production starts them (serve.py: the provider and the tool server on its own port): every tool
answers what its REST operation answers, counts once on the key's meter (the handshake and the
listing never), draws on the key's budget shared with REST, and every refusal comes back as the
protocol's error with the gateway's and the API's messages."""

from __future__ import annotations

import json
import time

import pytest
import redis
import requests
from mcp import MCPError

from app.core.extensions import db
from app.services.apikeys import revoke_key
from app.web.toolserver.tools import TOOLS
from tests.api_support import make_catalog, uid
from tests.conftest import redis_test_url, unavailable
from tests.key_support import index_catalog, make_key
from tests.tool_support import ToolServers, calls, metered, tool_servers, with_client

pytestmark = pytest.mark.live

REDIS_URL = redis_test_url(5)  # the key-door tests' Redis database
PROTOCOL = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def servers(app, settings, tmp_path_factory):
    with tool_servers(settings, tmp_path_factory.mktemp("tool-server")) as running:
        yield running


def rest(servers: ToolServers, secret: str, method: str, path: str, **kw) -> requests.Response:
    return requests.request(method, servers.rest + "/v1" + path, headers={"x-api-key": secret}, timeout=30, **kw)


def rest_data(servers: ToolServers, secret: str, method: str, path: str, **kw):
    response = rest(servers, secret, method, path, **kw)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def the_cases(catalog) -> list[tuple[str, dict, str, str, dict]]:
    """Each tool with arguments, and the REST call it maps to: (tool, arguments, method, path, request)."""
    track, album = catalog.newest_first[0]
    return [
        ("search", {"keyword": "track 1"}, "POST", "/search", {"json": {"keyword": "track 1"}}),
        (
            "search",
            {"keyword": "o", "type": ["profile"]},
            "POST",
            "/search",
            {"json": {"keyword": "o", "type": ["profile"]}},
        ),
        ("search_autocomplete", {"q": "Ada"}, "GET", "/search/autocomplete", {"params": {"q": "Ada"}}),
        (
            "search_profiles",
            {"names": ["ada", "otto"], "track_ids": [track], "spotify_track_ids": ["sp2"]},
            "GET",
            "/profiles/search",
            {"params": {"names": "ada,otto", "track_ids": track, "spotify_track_ids": "sp2"}},
        ),
        ("get_profile", {"id_value": catalog.mine}, "GET", f"/profile/{catalog.mine}", {}),
        ("get_profile_credits", {"id_value": catalog.mine}, "GET", f"/profile/{catalog.mine}/credits", {}),
        (
            "get_profile_credits",
            {"id_value": catalog.mine, "limit": 2, "offset": 1},
            "GET",
            f"/profile/{catalog.mine}/credits",
            {"params": {"limit": 2, "offset": 1}},
        ),
        (
            "get_profile_collaborators",
            {"id_value": catalog.mine, "limit": 5},
            "GET",
            f"/profile/{catalog.mine}/collaborators",
            {"params": {"limit": 5}},
        ),
        ("get_profile_charts", {"id_value": catalog.mine}, "GET", f"/profile/{catalog.mine}/charts", {}),
        ("get_track", {"id_key": "isrc", "id_value": "USAAA2000000"}, "GET", "/track/isrc/USAAA2000000", {}),
        ("get_track", {"id_key": "id", "id_value": track}, "GET", f"/track/id/{track}", {}),
        ("get_track_albums", {"id_key": "spotify", "id_value": "sp1"}, "GET", "/track/spotify/sp1/albums", {}),
        ("get_album", {"id_key": "upc", "id_value": "000000000001"}, "GET", "/album/upc/000000000001", {}),
        (
            "get_album_credits",
            {"id_key": "id", "id_value": album, "offset": 0},
            "GET",
            f"/album/id/{album}/credits",
            {"params": {"offset": 0}},
        ),
        ("get_roles", {}, "GET", "/roles", {}),
    ]


def test_every_tool_answers_what_rest_answers_and_counts_once(servers):
    catalog = make_catalog(credits=5)
    index_catalog()
    key, secret = make_key()
    cases = the_cases(catalog)
    assert {case[0] for case in cases} == {tool.name for tool in TOOLS}  # all 12

    async def work(client):
        listed = await client.list_tools()
        assert metered(key.id) == 0  # server/discover and tools/list are not counted
        results = []
        for name, arguments, *_ in cases:
            before = metered(key.id)
            result = await client.call_tool(name, arguments)
            assert metered(key.id) == before + 1, name  # exactly one per call
            results.append(result)
        return listed, results

    listed, results = with_client(servers.mcp, secret, work)
    tools = {tool.name: tool for tool in listed.tools}
    assert list(tools) == [tool.name for tool in TOOLS]
    for spec in TOOLS:
        tool = tools[spec.name]
        assert tool.description and spec.maps_to in tool.description
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False
        assert tool.input_schema.get("required", []) == list(spec.required)
        assert tool.annotations.read_only_hint is True
    assert tools["search"].input_schema["required"] == ["keyword"]
    assert tools["get_track"].input_schema["properties"]["id_key"]["enum"] == ["id", "isrc", "spotify"]
    assert tools["get_album"].input_schema["properties"]["id_key"]["enum"] == ["id", "upc", "spotify"]
    assert tools["get_profile_credits"].input_schema["properties"]["limit"]["maximum"] == 50

    counted = metered(key.id)
    for (name, _arguments, method, path, request), result in zip(cases, results, strict=True):
        expected = rest_data(servers, secret, method, path, **request)
        assert not result.is_error, (name, result.content)
        structured = result.structured_content
        assert (structured["items"] if name == "get_profile_charts" else structured) == expected, name
        assert json.loads(result.content[0].text) == structured  # the same answer as JSON text
    assert metered(key.id) == counted + len(cases)  # the REST calls count on the same meter
    assert results[0].structured_content["tracks"]["items"][0]["title"] == "Track 1"
    assert results[4].structured_content["name"] == "Ada Mine"
    assert secret not in servers.log_text()


def test_a_handshake_era_client_gets_the_same_answers(servers):
    """A client on protocol 2025-11-25 (the `initialize` handshake, as most MCP hosts speak today)."""
    catalog = make_catalog(credits=3)
    key, secret = make_key()

    async def work(client):
        assert client.protocol_version == "2025-11-25"
        await client.list_tools()
        assert metered(key.id) == 0  # initialize, notifications/initialized, tools/list
        return [
            await client.call_tool("get_profile_charts", {"id_value": catalog.other}),
            await client.call_tool("get_profile", {"id_value": catalog.other}),
        ]

    charts, profile = with_client(servers.mcp, secret, work, mode="legacy")
    assert metered(key.id) == 2
    assert charts.structured_content == {"items": rest_data(servers, secret, "GET", f"/profile/{catalog.other}/charts")}
    assert profile.structured_content == rest_data(servers, secret, "GET", f"/profile/{catalog.other}")


def refusal_of(result, code: int, message: str) -> dict:
    assert result.is_error, result
    assert result.content[0].text == message
    details = result.structured_content
    assert details["code"] == code and details["message"] == message and details["request_id"]
    return details


def test_bad_arguments_and_unknown_ids_are_tool_errors_and_not_counted(servers):
    catalog = make_catalog(credits=3)
    index_catalog()
    key, secret = make_key()
    invalid = "Invalid parameters supplied"
    refused = [
        ("search", {}, invalid),  # the required keyword missing
        ("search", {"keyword": "   "}, invalid),
        ("search", {"keyword": 5}, invalid),
        ("search", {"keyword": "x" * 201}, invalid),
        ("search", {"keyword": "a\x00b"}, invalid),
        ("search", {"keyword": "a", "type": ["artist"]}, invalid),
        ("search", {"keyword": "a", "kind": "track"}, invalid),  # an argument the schema does not name
        ("search_autocomplete", {"q": ""}, invalid),
        ("search_profiles", {"names": ["ada"]}, invalid),  # neither track_ids nor spotify_track_ids
        ("search_profiles", {"names": "ada", "track_ids": ["x"]}, invalid),
        ("search_profiles", {"names": ["n"] * 21, "track_ids": ["x"]}, invalid),
        ("get_profile_credits", {"id_value": catalog.mine, "limit": 51}, "Too big page, max page size is 50"),
        ("get_profile_credits", {"id_value": catalog.mine, "limit": 0}, invalid),
        ("get_profile_credits", {"id_value": catalog.mine, "limit": "5"}, invalid),
        ("get_profile_credits", {"id_value": catalog.mine, "offset": -1}, invalid),
        ("get_profile_credits", {"id_value": catalog.mine, "limit": True}, invalid),
        ("get_track", {"id_key": "upc", "id_value": "000000000001"}, invalid),  # not a track identifier
        ("get_album", {"id_value": "000000000001"}, invalid),
        ("get_roles", {"limit": 5}, invalid),  # /roles declares no parameters
        ("get_profile", {"id_value": "not-a-uuid"}, "Not found"),
        ("get_profile_charts", {"id_value": uid(99, 1)}, "Not found"),
        ("get_track", {"id_key": "isrc", "id_value": "ZZZZZ0000000"}, "Not found"),
        ("get_track_albums", {"id_key": "spotify", "id_value": "nope"}, "Not found"),
        ("get_album_credits", {"id_key": "upc", "id_value": "999"}, "Not found"),
    ]

    async def work(client):
        results = [await client.call_tool(name, arguments) for name, arguments, _ in refused]
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("delete_everything", {})
        return results, unknown.value

    results, unknown = with_client(servers.mcp, secret, work)
    for (name, arguments, message), result in zip(refused, results, strict=True):
        assert result.is_error, (name, arguments)
        refusal_of(result, 404 if message == "Not found" else 400, message)
    assert unknown.error.code == -32602 and "Unknown tool" in unknown.error.message
    assert metered(key.id) == 0  # a refused call is not counted
    # The REST operations answer the same for the same facts.
    assert rest(servers, secret, "GET", f"/profile/{catalog.mine}/credits", params={"limit": 51}).json()["message"] == (
        "Too big page, max page size is 50"
    )
    assert rest(servers, secret, "GET", "/track/isrc/ZZZZZ0000000").json()["message"] == "Not found"


def test_keys_the_gateway_refuses_are_refused_at_the_door(servers):
    key, _secret = make_key()
    gone, gone_secret = make_key(name="Revoked")
    revoke_key(gone)
    db.session.commit()
    _, publishable = make_key("publishable", domains=["widgets.example"])

    for presented, message in (
        (None, "No API key found in request"),
        ("msk_" + "a" * 43, "Unauthorized"),
        ("msk_nope", "Unauthorized"),
        (gone_secret, "Unauthorized"),
        (publishable, "You cannot consume this service"),
    ):
        for mode in ("auto", "legacy"):
            with pytest.raises(BaseException) as refused:
                with_client(servers.mcp, presented, lambda client: client.list_tools(), mode=mode)
            error = refused.value
            while isinstance(error, BaseExceptionGroup):
                error = error.exceptions[0]
            assert isinstance(error, MCPError) and error.error.message == message, (presented, mode, error)
            assert error.error.data["status"] == (403 if presented == publishable else 401)

    # What a client sees on the wire: the HTTP status MCP clients act on, a JSON-RPC error body.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_roles", "arguments": {}}}
    for headers, status, message in (
        ({}, 401, "No API key found in request"),
        ({"x-api-key": "msk_" + "b" * 43}, 401, "Unauthorized"),
        ({"x-api-key": publishable}, 403, "You cannot consume this service"),
    ):
        answer = requests.post(servers.mcp, json=body, headers={**PROTOCOL, **headers}, timeout=30)
        assert answer.status_code == status
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": message,
                "data": {"status": status, "request_id": answer.headers["X-Request-Id"]},
            },
        }
        assert answer.headers["X-Gateway-Request-Id"] == answer.headers["X-Request-Id"]
        assert answer.headers["Cache-Control"] == "no-store"
    assert metered(key.id) == 0 and metered(gone.id) == 0
    log = servers.log_text()
    assert gone_secret not in log and publishable not in log


def burst(servers: ToolServers, key: str, profile_id: str, rest_too: bool) -> list:
    """Six requests of one key in one second: tool calls (alternating with REST calls when
    `rest_too`); each REST answer's status or each tool call's result."""

    async def work(client):
        await client.list_tools()  # connected: the handshake and the listing spent nothing
        for _attempt in range(3):
            while time.time() % 1 > 0.3:  # start early in a second so the burst fits in one window
                time.sleep(0.02)
            outcomes = []
            for n in range(6):
                if rest_too and n % 2 == 0:
                    outcomes.append(rest(servers, key, "GET", f"/profile/{profile_id}").status_code)
                else:
                    outcomes.append(await client.call_tool("get_profile", {"id_value": profile_id}))
            if [o if isinstance(o, int) else 429 if o.is_error else 200 for o in outcomes] == [200] * 5 + [429]:
                return outcomes
            time.sleep(1.1)  # the burst crossed a second boundary (a slow machine): again, in a fresh window
        return outcomes

    return with_client(servers.mcp, key, work)


def test_the_plan_limit_refuses_with_the_time_to_wait(servers):
    """The start plan: 5 a second for the key."""
    catalog = make_catalog(credits=1)
    key, start = make_key(plan="start")
    outcomes = burst(servers, start, catalog.mine, rest_too=False)
    assert [not o.is_error for o in outcomes] == [True] * 5 + [False], outcomes
    details = refusal_of(outcomes[5], 429, "API rate limit exceeded: 5 per second for this key; retry after 1 second")
    assert details["retryAfter"] == 1
    assert metered(key.id) % 5 == 0 and metered(key.id) >= 5  # each window's five answers, its refusals not


@pytest.fixture(scope="module")
def redis_servers(app, settings, tmp_path_factory):
    """The provider and the tool server counting in Redis, as production does with REDIS_URL."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=5).ping()
    except redis.RedisError:
        unavailable("no Redis at " + REDIS_URL, "the Redis tests")
    with tool_servers(settings, tmp_path_factory.mktemp("tool-server-redis"), REDIS_URL=REDIS_URL) as running:
        yield running


def test_the_plan_limit_is_shared_with_rest_in_redis(redis_servers):
    catalog = make_catalog(credits=1)
    key, start = make_key(plan="start")
    store = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        outcomes = burst(redis_servers, start, catalog.mine, rest_too=True)
        assert outcomes[:5:2] == [200, 200, 200] and not any(o.is_error for o in outcomes[1:5:2]), outcomes
        refusal_of(outcomes[5], 429, "API rate limit exceeded: 5 per second for this key; retry after 1 second")
    finally:
        for k in store.scan_iter(match=f"*{key.id}*"):
            store.delete(k)


def test_one_access_line_per_tool_call_names_the_key_never_the_secret(servers):
    catalog = make_catalog(credits=1)
    key, secret = make_key()
    calls(servers.mcp, secret, [("get_profile", {"id_value": catalog.mine}), ("get_profile", {"id_value": "nope"})])
    time.sleep(0.5)  # the lines are written as the responses go out
    lines = [json.loads(line) for line in servers.log_text().splitlines() if line.startswith("{")]
    tool_lines = [line for line in lines if line.get("logger") == "credits_id.access" and line.get("tool")]
    mine = [line for line in tool_lines if line.get("key_id") == key.id]
    assert [(line["tool"], line["status"], line["http_status"]) for line in mine] == [
        ("get_profile", 200, 200),
        ("get_profile", 404, 200),
    ]
    for line in mine:
        assert line["endpoint"] == "tools/call" and line["key_prefix"] == key.prefix and line["path"] == "/mcp"
        assert line["request_id"] and line["latency_ms"] >= 0 and line["remote_addr"] == "127.0.0.1"
    assert secret not in servers.log_text()


def test_a_tool_call_carries_the_request_id_and_the_keys_window(servers):
    make_catalog(credits=1)
    _, secret = make_key()
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "get_roles",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        **PROTOCOL,
        "x-api-key": secret,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "get_roles",
        "X-Request-Id": "support-ticket-42",
    }
    answer = requests.post(servers.mcp, json=body, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["structuredContent"] == rest_data(servers, secret, "GET", "/roles")
    assert answer.headers["X-Request-Id"] == answer.headers["X-Gateway-Request-Id"] == "support-ticket-42"
    assert answer.headers["RateLimit-Limit"] == "300" and answer.headers["RateLimit-Remaining"] == "299"
    assert answer.headers["Cache-Control"] == "no-store"
    # A page elsewhere on the origin (the transport's DNS-rebinding guard refuses a foreign Origin).
    foreign = requests.post(servers.mcp, json=body, headers={**headers, "Origin": "https://evil.example"}, timeout=30)
    assert foreign.status_code == 403
    assert (
        requests.post(servers.mcp.replace("/mcp", "/other"), json=body, headers=headers, timeout=30).status_code == 404
    )
