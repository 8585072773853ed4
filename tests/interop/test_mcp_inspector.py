"""Interop with the MCP Inspector (a client nobody here wrote), in its command-line mode, against the
tool server started as in production: it lists the 12 tools, calls one with a key and gets the
REST answer, sees a tool error as one, and is refused without a key. `make test` installs the
pinned Inspector from tests/interop/mcp_inspector/package-lock.json (git-ignored node_modules)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

from app.web.toolserver.tools import TOOLS
from tests.api_support import make_catalog
from tests.interop.conftest import tool_unavailable
from tests.key_support import make_key
from tests.tool_support import metered, tool_servers

FOLDER = Path(__file__).with_name("mcp_inspector")
INSPECTOR = FOLDER / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture(scope="module")
def inspector() -> str:
    if shutil.which("node") is None:
        tool_unavailable("Node.js (20+) is not installed: the MCP Inspector interop test needs `node`")
    if not INSPECTOR.exists():
        tool_unavailable(
            "the MCP Inspector is not installed: run `make test-tools` (npm ci --prefix tests/interop/mcp_inspector)"
        )
    return str(INSPECTOR)


@pytest.fixture(scope="module")
def servers(app, settings, tmp_path_factory):
    with tool_servers(settings, tmp_path_factory.mktemp("inspector")) as running:
        yield running


def inspect(inspector: str, url: str, key: str | None, *args: str) -> subprocess.CompletedProcess:
    """`mcp-inspector --cli URL --transport http --method ...` with the key as a header."""
    command = [inspector, "--cli", url, "--transport", "http", *args]
    if key is not None:
        command += ["--header", f"x-api-key: {key}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=FOLDER)


def test_the_inspector_lists_calls_and_is_refused(inspector, servers):
    catalog = make_catalog(credits=2)
    key, secret = make_key()

    listed = inspect(inspector, servers.mcp, secret, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)["tools"]
    assert [tool["name"] for tool in tools] == [tool.name for tool in TOOLS]
    assert tools[0]["inputSchema"]["required"] == ["keyword"]

    called = inspect(
        inspector,
        servers.mcp,
        secret,
        "--method",
        "tools/call",
        "--tool-name",
        "get_profile",
        "--tool-arg",
        f"id_value={catalog.mine}",
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    expected = requests.get(f"{servers.rest}/v1/profile/{catalog.mine}", headers={"x-api-key": secret}, timeout=30)
    assert result["structuredContent"] == expected.json()["data"]
    assert not result.get("isError")

    missing = inspect(
        inspector,
        servers.mcp,
        secret,
        "--method",
        "tools/call",
        "--tool-name",
        "get_profile",
        "--tool-arg",
        "id_value=nope",
    )
    assert missing.returncode == 0, missing.stderr
    assert json.loads(missing.stdout)["isError"] is True and "Not found" in missing.stdout
    assert metered(key.id) == 2  # the Inspector's call and the REST one; the listing and the 404 not

    refused = inspect(inspector, servers.mcp, None, "--method", "tools/list")
    assert refused.returncode != 0 and "No API key found in request" in refused.stdout + refused.stderr
