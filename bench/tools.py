"""A tool call's server CPU beside the REST call it maps to: the same keys, the same data, both
through real HTTP against `python serve.py` (the provider and the tool server, as production runs
them: one worker each, one thread for the provider's).

    python -m bench.tools                           # 5 s per operation and door, 3 rounds, SQLite
    python -m bench.tools --duration 3 --rounds 1 --ops get_profile,search
    python -m bench.tools --database-url postgresql+psycopg://user@127.0.0.1:5432/db

Each operation is measured as REST (`GET /v1/...` with `x-api-key`) and as its tool
(`tools/call` over Streamable HTTP at protocol 2026-07-28, the request the SDK's client sends),
interleaved round by round, one client at a time over a keep-alive connection (the shared harness's
lean client, ../shared/bench/oidcperf.py). Server CPU is each server's process tree (granian's
main process and its worker): the provider's tree less the tool server's, which serve.py starts
as its child. Requests rotate over several keys with enterprise limits far above the plan's, so no
limit refuses any (a search counts ten requests against them).
The demo catalog (`flask demo seed`'s) is the data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.run import load_harness  # noqa: E402
from bench.servers import free_port, stop  # noqa: E402

DEFAULT_HARNESS = Path(os.environ.get("BENCH_HARNESS") or ROOT.parent / "shared" / "bench")
KEYS = 24  # scale keys: 100 a second each, so 2,400 a second in all before any is refused
TARGET = 1.3  # a tool call's CPU at most 1.3 times its REST call's


@dataclass(frozen=True)
class Operation:
    """A tool with its arguments and the REST request it maps to."""

    name: str
    tool: str
    arguments: dict[str, Any]
    method: str
    path: str
    body: dict[str, Any] | None = None


def operations(ids: dict[str, str]) -> list[Operation]:
    profile, isrc, upc = ids["profile"], ids["isrc"], ids["upc"]
    return [
        Operation("get_profile", "get_profile", {"id_value": profile}, "GET", f"/v1/profile/{profile}"),
        Operation(
            "get_profile_credits",
            "get_profile_credits",
            {"id_value": profile, "limit": 20},
            "GET",
            f"/v1/profile/{profile}/credits?limit=20",
        ),
        Operation("get_track", "get_track", {"id_key": "isrc", "id_value": isrc}, "GET", f"/v1/track/isrc/{isrc}"),
        Operation("get_album", "get_album", {"id_key": "upc", "id_value": upc}, "GET", f"/v1/album/upc/{upc}"),
        Operation("search", "search", {"keyword": "love"}, "POST", "/v1/search", {"keyword": "love"}),
        Operation("get_roles", "get_roles", {}, "GET", "/v1/roles"),
    ]


def prepare(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The schema, the demo catalog and KEYS scale keys of the demo developer; the keys' values and
    the ids the operations read (the profile with the most credits, one of its tracks, an album)."""
    from flask_migrate import upgrade

    from app import create_app
    from app.core.extensions import db
    from app.models import Album, Credit, Track, User
    from app.services.apikeys import create_key
    from app.services.billing.enterprise import MAX_PER_SECOND, set_key_limits, set_terms
    from app.services.billing.ledger import account_for
    from app.services.catalog_seed import profiles_by_credit_count
    from app.services.demo import DEMO_DEVELOPER, seed_accounts

    app = create_app(settings)
    with app.app_context():
        upgrade()
        seed_accounts()
        developer = db.session.scalar(db.select(User).where(User.email == DEMO_DEVELOPER["email"]))
        # Enterprise terms: no spend ceiling and no balance to run out, so no call meets a 402.
        set_terms(account_for(developer), True, False, None, "benchmark")
        made = [create_key(developer, f"bench {n}", "secret", "scale") for n in range(KEYS)]
        for key, _ in made:  # an enterprise key's own limits, far above what one client asks: a search counts 10
            set_key_limits(key, MAX_PER_SECOND * 60, MAX_PER_SECOND)
        values = [value for _, value in made]
        profile = profiles_by_credit_count(1)[0]
        track = db.session.scalar(
            db.select(Track).join(Credit, Credit.track_id == Track.id).where(Credit.profile_id == profile).limit(1)
        )
        album = db.session.scalar(db.select(Album).where(Album.upc.is_not(None)).limit(1))
        db.session.commit()
        return values, {"profile": profile, "isrc": track.isrcs[0], "upc": album.upc}


def start(settings: dict[str, str], log_path: Path) -> tuple[subprocess.Popen, int, str, str]:
    """`python serve.py` with both servers; waits until both answer. The tool server's pid too."""
    web, tools = free_port(), free_port()
    mcp = f"http://127.0.0.1:{tools}/mcp"
    env = {
        **os.environ,
        **settings,
        "WEB_BIND": f"127.0.0.1:{web}",
        "WEB_CONCURRENCY": "1",
        "MCP_BIND": f"127.0.0.1:{tools}",
        "MCP_URL": mcp,
        "MCP_CONCURRENCY": "1",
        "LOG_LEVEL": "WARNING",
    }
    log = open(log_path, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "serve.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    rest = f"http://127.0.0.1:{web}"
    deadline = time.monotonic() + 180
    import urllib.error
    import urllib.request

    for url, method in ((rest + "/healthz", "GET"), (mcp, "POST")):
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc)
                raise SystemExit(f"bench.tools: the servers did not start; see {log_path}")
            try:
                request = urllib.request.Request(url, data=b"{}" if method == "POST" else None)  # noqa: S310 - loopback
                urllib.request.urlopen(request, timeout=5)  # noqa: S310 - our own server on loopback
                break
            except urllib.error.HTTPError:
                break  # answering (the tool server's 401 without a key)
            except OSError:
                time.sleep(0.2)
    tools_pid = next(
        int(pid)
        for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if Path(f"/proc/{pid}/cmdline").read_bytes().endswith(b"serve.py\x00tools\x00")
    )
    return proc, tools_pid, rest, mcp


def tool_request(tool: str, arguments: dict[str, Any], key: str, n: int) -> tuple[dict[str, str], bytes]:
    """What the SDK's client sends for a tool call at protocol 2026-07-28 (headers and body)."""
    body = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "x-api-key": key,
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    return headers, json.dumps(body).encode()


def works(op: Operation, rest: str, mcp: str, keys: list[str]) -> dict[str, Callable[..., Awaitable[bool]]]:
    turn = cycle(keys)
    counter = iter(range(1, 1 << 62))

    async def by_rest(conn: Any, jar: Any) -> bool:
        headers = {"x-api-key": next(turn)}
        body = b""
        if op.body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(op.body).encode()
        response = await conn.request(op.method, rest + op.path, headers=headers, body=body)
        if response.status != 200:
            raise RuntimeError(f"REST {op.path}: {response.status} {response.text[:200]}")
        return True

    async def by_tool(conn: Any, jar: Any) -> bool:
        headers, body = tool_request(op.tool, op.arguments, next(turn), next(counter))
        response = await conn.request("POST", mcp, headers=headers, body=body)
        if response.status != 200 or response.json()["result"].get("isError"):
            raise RuntimeError(f"tool {op.tool}: {response.status} {response.text[:200]}")
        return True

    return {"rest": by_rest, "tool": by_tool}


def measure(
    harness: Any, door: str, work: Callable, url: str, duration: float, trees: Callable[[], tuple[float, float]]
) -> dict:
    """One timed run at one client on `url`'s server: requests/s and the door's server CPU per call (ms)."""
    parts = urlsplit(url)
    cfg = SimpleNamespace(hostport=(parts.hostname, parts.port))  # all the harness's loops read of it
    asyncio.run(harness.run_loops(cfg, 1, work, duration=1.0, name=door))  # warm-up, not counted
    provider0, tools0 = trees()
    result, _ = asyncio.run(harness.run_loops(cfg, 1, work, duration=duration, name=door))
    provider1, tools1 = trees()
    tools_cpu = tools1 - tools0
    cpu = tools_cpu if door == "tool" else (provider1 - provider0) - tools_cpu
    if result["errors"] or not result["ok"]:
        raise SystemExit(f"bench.tools: {door} failed ({result['errors']} errors)")
    return {"rps": result["rps"], "cpu_ms": cpu * 1000 / result["ok"], "ok": result["ok"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per operation, door and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--ops", default="", help="some of get_profile,get_profile_credits,get_track,get_album,search,get_roles"
    )
    ap.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    ap.add_argument("--harness", default=str(DEFAULT_HARNESS), help="folder of the shared harness")
    ap.add_argument("--json", default="", help="also write the figures here")
    a = ap.parse_args(argv)

    harness = load_harness(Path(a.harness))
    tmp = Path(tempfile.mkdtemp(prefix="credits-bench-tools-"))
    settings = {
        "APP_ENV": "development",
        "DATABASE_URL": a.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}",
        "KEYS_DIR": str(tmp / "keys"),
        "SMTP_URL": "",
    }
    proc = None
    try:
        keys, ids = prepare(settings)
        proc, tools_pid, rest, mcp = start(settings, tmp / "servers.log")

        def trees() -> tuple[float, float]:
            return harness.proc_tree_cpu(proc.pid), harness.proc_tree_cpu(tools_pid)

        chosen = [op for op in operations(ids) if not a.ops or op.name in a.ops.split(",")]
        runs: dict[str, dict[str, list[dict]]] = {op.name: {"rest": [], "tool": []} for op in chosen}
        for round_no in range(a.rounds):
            for op in chosen:
                for door, work in works(op, rest, mcp, keys).items():
                    url = mcp if door == "tool" else rest
                    runs[op.name][door].append(measure(harness, door, work, url, a.duration, trees))
            print(f"round {round_no + 1} of {a.rounds} done", file=sys.stderr)
        report(runs, a)
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def report(runs: dict[str, dict[str, list[dict]]], a: argparse.Namespace) -> None:
    figures = {}
    lines = [
        f"Server CPU per call (median of {a.rounds} runs of {a.duration:g} s, one client), REST beside its tool:",
        "",
        "| operation | REST ms/call | tool ms/call | tool / REST | REST req/s | tool req/s |",
        "|---|---|---|---|---|---|",
    ]
    for name, doors in runs.items():
        rest_cpu = statistics.median(r["cpu_ms"] for r in doors["rest"])
        tool_cpu = statistics.median(r["cpu_ms"] for r in doors["tool"])
        rest_rps = statistics.median(r["rps"] for r in doors["rest"])
        tool_rps = statistics.median(r["rps"] for r in doors["tool"])
        ratio = tool_cpu / rest_cpu
        figures[name] = {
            "rest_cpu_ms": rest_cpu,
            "tool_cpu_ms": tool_cpu,
            "ratio": ratio,
            "rest_rps": rest_rps,
            "tool_rps": tool_rps,
        }
        mark = "" if ratio <= TARGET else f" (target {TARGET}x)"
        lines.append(
            f"| {name} | {rest_cpu:.3f} | {tool_cpu:.3f} | {ratio:.2f}x{mark} | {rest_rps:.0f} | {tool_rps:.0f} |"
        )
    print("\n".join(lines))
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
