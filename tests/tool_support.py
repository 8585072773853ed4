"""The tool server for the tests, started as production starts it (`python serve.py`: the provider
and, beside it on its own port, the tool server), and the MCP SDK's own client to talk to it."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app.core.extensions import db
from app.models import ApiUsage
from tests.conftest import free_port, start_server

T = TypeVar("T")


@dataclass
class ToolServers:
    rest: str  # the provider's origin: /v1 for the REST answers
    mcp: str  # the tool server's endpoint (MCP_URL)
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def tool_servers(settings: dict, log_dir: Path, own_issuer: bool = False, **env: str) -> Iterator[ToolServers]:
    """`serve.py` with MCP_BIND set: one provider worker, one tool server worker. `own_issuer`:
    the provider's issuer is its own origin (what an agent signing a member in is sent to), not
    the test settings' (served by `live_server`, if at all)."""
    web, tools = free_port(), free_port()
    if own_issuer:
        settings = {**settings, "ISSUER_URL": f"http://127.0.0.1:{web}"}
    log_path = log_dir / "servers.log"
    mcp = f"http://127.0.0.1:{tools}/mcp"
    proc = start_server(settings, web, log_path, MCP_BIND=f"127.0.0.1:{tools}", MCP_URL=mcp, MCP_CONCURRENCY="1", **env)
    try:
        deadline = time.monotonic() + 120
        while True:  # the provider answers; the tool server may take a moment more
            try:
                if requests.post(mcp, json={}, timeout=10).status_code == 401:
                    break
            except requests.RequestException:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the tool server did not start; see {log_path}")
            time.sleep(0.2)
        yield ToolServers(f"http://127.0.0.1:{web}", mcp, log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def with_client(url: str, key: str | None, work: Callable[[Client], Awaitable[T]], mode: str = "auto") -> T:
    """Connect the SDK's client over Streamable HTTP (the key in `x-api-key`), run `work`, close.
    In a thread of its own (with this test's context: its app context for `metered`), since a
    real-browser test's event loop may be running in this one."""

    async def run() -> T:
        headers = {"x-api-key": key} if key is not None else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                return await work(client)

    context = contextvars.copy_context()
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(context.run, asyncio.run, run()).result()


def calls(url: str, key: str, tool_calls: list[tuple[str, dict[str, Any]]], mode: str = "auto") -> list[Any]:
    """Each tool call's result, over one connection."""

    async def work(client: Client) -> list[Any]:
        return [await client.call_tool(name, arguments) for name, arguments in tool_calls]

    return with_client(url, key, work, mode)


def metered(key_id: str) -> int:
    """The key's `api_requests` count, read afresh (a new session: no earlier snapshot)."""
    db.session.remove()
    return db.session.scalar(
        db.select(db.func.coalesce(db.func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == key_id)
    )
