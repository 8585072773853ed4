"""`make run`'s last step: the provider on :5000, the demo app on :5001 and the tool server (MCP)
on :5002, side by side.

Reads `flask demo seed --json` on standard input, prints the demo credentials, and hands the demo
app its client secret through the environment (the secret changes at every seed and is never
written to disk). Ctrl-C (or SIGTERM) stops them all; if one stops, so do the others."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROVIDER = "http://127.0.0.1:5000"
DEMO = "http://127.0.0.1:5001"
TOOLS_BIND = "127.0.0.1:5002"
TOOLS = f"http://{TOOLS_BIND}/mcp"  # MCP_URL's default (app/core/config.py)
DEMO_CLIENT_ID = "demo-web-app"


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
    provider_argv = [python, "-m", "flask", "run", "--host", "127.0.0.1", "--port", "5000"]
    provider = subprocess.Popen(  # noqa: S603 - fixed argv
        provider_argv,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "FLASK_APP": "wsgi"},
    )
    demo_env = {**os.environ, "DEMO_CLIENT_SECRET": secret, "CREDITS_ID_ISSUER": PROVIDER}
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
