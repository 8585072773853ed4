"""`make run` on ports of one's choosing (issue 50, item 3), in a real browser: `make run PORT=...
DEMO_PORT=... TOOLS_PORT=...` starts the provider, the demo app and the tool server there; the
seed registered the demo app's redirect URIs for that port, so "Sign in with Credits ID" works end
to end; and the banner prints an admin login that opens the admin half of the console."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time

import pytest
import requests

from tests.conftest import ROOT, free_port


@pytest.fixture
def make_run(tmp_path):
    ports = {"PORT": free_port(), "DEMO_PORT": free_port(), "TOOLS_PORT": free_port()}
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_", "ISSUER_URL", "MCP_", "REDIS_URL", "SECRET_KEY", "APP_ENV", "MAKE"))
    }
    environ.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'run.sqlite3'}",
        KEYS_DIR=str(tmp_path / "keys"),
        MAIL_OUTBOX_DIR=str(tmp_path / "outbox"),
    )
    proc = subprocess.Popen(
        ["make", "-s", "run", *(f"{k}={v}" for k, v in ports.items())],
        cwd=ROOT,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the test stops make and everything it started
    )
    output: list[str] = []
    banner_done = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            output.append(line)
            if "Ctrl-C stops them all" in line:
                banner_done.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert banner_done.wait(180), "make run printed no banner:\n" + "".join(output[-60:])
        provider = f"http://127.0.0.1:{ports['PORT']}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if (
                    requests.get(provider + "/.well-known/openid-configuration", timeout=5).status_code == 200
                    and requests.get(f"http://127.0.0.1:{ports['DEMO_PORT']}/", timeout=5).status_code == 200
                ):
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "the servers did not answer:\n" + "".join(output[-60:])
            time.sleep(0.3)
        yield ports, "".join(output), output
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def password_of(banner: str, email: str) -> str:
    match = re.search(re.escape(email) + r"\s+password: (\S+)", banner)
    assert match, f"no password for {email} in:\n{banner}"
    return match.group(1)


def test_make_run_on_chosen_ports_signs_in_through_the_demo_app_and_prints_an_admin(make_run, page, shots):
    from playwright.sync_api import expect

    ports, banner, output = make_run
    provider, demo = f"http://127.0.0.1:{ports['PORT']}", f"http://127.0.0.1:{ports['DEMO_PORT']}"
    assert f"provider  {provider}" in banner and f"demo app  {demo}" in banner
    assert f"http://127.0.0.1:{ports['TOOLS_PORT']}/mcp" in banner
    discovery = requests.get(provider + "/.well-known/openid-configuration", timeout=30).json()
    assert discovery["issuer"] == provider
    # The terminal reads one line per request (LOG_STYLE=text), not JSON (issue 50, item 16).
    requests.get(provider + "/console", timeout=30, allow_redirects=False)
    deadline = time.monotonic() + 10
    while not any(re.search(r"^\d\d:\d\d:\d\d  GET +/console -> 302", line) for line in output):
        assert time.monotonic() < deadline, "no readable request line:\n" + "".join(output[-30:])
        time.sleep(0.2)
    assert not [line for line in output if line.startswith('{"time"')], "make run printed JSON lines"

    page.goto(demo + "/")
    page.get_by_role("button", name="Sign in with Credits ID").click()
    page.get_by_label("Email").fill("basic@demo.credits.example")
    page.get_by_label("Password").fill(password_of(banner, "basic@demo.credits.example"))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/consent?**")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(demo + "/")  # the redirect URI registered for DEMO_PORT
    expect(page.get_by_role("heading", level=1)).to_contain_text("Billie Basic")
    shots.take("demo-signed-in-on-chosen-ports")

    admin = page.context.browser.new_context()
    try:
        console = admin.new_page()
        console.goto(provider + "/login?next=/console/users")
        console.get_by_label("Email").fill("admin@demo.credits.example")
        console.get_by_label("Password").fill(password_of(banner, "admin@demo.credits.example"))
        console.get_by_role("button", name="Sign in").click()
        console.wait_for_url("**/console/users")
        expect(console.get_by_role("heading", name="Members")).to_be_visible()
        expect(console.locator("table.users")).to_contain_text("pro@demo.credits.example")
    finally:
        admin.close()
