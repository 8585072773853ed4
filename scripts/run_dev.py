"""`make run`'s last step: the provider on PORT (5000), the demo app on DEMO_PORT (5001) and the
tool server (MCP) on TOOLS_PORT (5002), side by side; `make run PORT=8000 DEMO_PORT=8001` moves them
(macOS's AirPlay Receiver holds 5000).

Reads `flask demo seed --json` on standard input (the seed registered the demo app's redirect and
logout URIs for DEMO_PORT), prints the demo credentials, and hands the demo app its client secret
through the environment (the secret changes at every seed and is never written to disk). Ctrl-C (or
SIGTERM) stops them all; if one stops, so do the others."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO_CLIENT_ID = "demo-web-app"


def port(name: str, default: int) -> int:
    raw = os.environ.get(name) or str(default)
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        sys.exit(f"run_dev: {name} must be a port number (1-65535), got {raw!r}")
    return int(raw)


PORT, DEMO_PORT, TOOLS_PORT = port("PORT", 5000), port("DEMO_PORT", 5001), port("TOOLS_PORT", 5002)
PROVIDER = os.environ.get("ISSUER_URL") or f"http://127.0.0.1:{PORT}"
DEMO = f"http://127.0.0.1:{DEMO_PORT}"
TOOLS_BIND = f"127.0.0.1:{TOOLS_PORT}"
TOOLS = os.environ.get("MCP_URL") or f"http://{TOOLS_BIND}/mcp"


def read_seed() -> dict:
    raw = sys.stdin.read()
    try:
        return json.loads(raw)
    except ValueError:
        sys.exit(f"run_dev: `flask demo seed --json` did not print JSON:\n{raw[-2000:]}")


def banner(seed: dict) -> str:
    lines = [
        "",
        "Credits ID is starting:",
        f"  provider  {PROVIDER}   (discovery: {PROVIDER}/.well-known/openid-configuration)",
        f'  demo app  {DEMO}   (Liner Notes) <- open this and click "Sign in with Credits ID"',
        f"  tools     {TOOLS}   (the MCP tool server for AI agents, with an API key: docs/tools.md)",
        "",
        "Demo members (passwords are new at every run):",
    ]
    lines += [f"  {m['tier']:<5}  {m['email']:<32} password: {m['password']}" for m in seed["members"]]
    lines.append("Demo apps:")
    for app in seed["apps"]:
        secret = f"secret: {app['client_secret']}" if app.get("client_secret") else "public: no secret"
        lines.append(f"  {app['client_id']:<16} {secret}")
    if admin := seed.get("admin"):
        lines.append(
            f"Demo admin (console: members, signing keys, activity): {admin['email']}  password: {admin['password']}"
        )
        lines.append(f"  console: {PROVIDER}/console")
    if dev := seed.get("developer"):
        lines.append(f"Demo developer (console): {dev['email']}  password: {dev['password']}")
        lines.append(f"  catalog API key: {dev['api_key']}")
        lines.append(f"  try: curl -H 'x-api-key: {dev['api_key']}' {PROVIDER}/v1/roles")
        lines.append(
            f"  or:  npx @modelcontextprotocol/inspector --cli {TOOLS} --transport http"
            f" --method tools/list --header 'x-api-key: {dev['api_key']}'"
        )
    lines.append("Ctrl-C stops them all.\n")
    return "\n".join(lines)


def main() -> int:
    seed = read_seed()
    secret = next((a["client_secret"] for a in seed["apps"] if a["client_id"] == DEMO_CLIENT_ID), None)
    if not secret:
        sys.exit(f"run_dev: the seed has no secret for {DEMO_CLIENT_ID}")
    print(banner(seed), flush=True)

    python = sys.executable
    provider_argv = [python, "-m", "flask", "run", "--host", "127.0.0.1", "--port", str(PORT)]
    provider = subprocess.Popen(  # noqa: S603 - fixed argv
        provider_argv,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "FLASK_APP": "wsgi"},
    )
    demo_env = {**os.environ, "DEMO_CLIENT_SECRET": secret, "CREDITS_ID_ISSUER": PROVIDER, "DEMO_PORT": str(DEMO_PORT)}
    demo = subprocess.Popen(  # noqa: S603 - fixed argv
        [python, "-m", "examples.demo_app"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env=demo_env,
    )
    tools = subprocess.Popen(  # noqa: S603 - fixed argv
        [python, "serve.py", "tools"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "MCP_BIND": TOOLS_BIND, "MCP_URL": TOOLS, "MCP_CONCURRENCY": "1"},
    )
    children = (provider, demo, tools)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `kill` stops them all, like Ctrl-C
    try:
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
