"""Real-browser set-up: Debian's Chromium driven by Playwright, a relying party's callback page,
and a screenshot of every page a test passes (under artifacts/e2e/, git-ignored).

Chromium comes from the Debian package (`scripts/ensure-chromium.sh`, run by `make test`), never
from Playwright's own download. Without it these tests skip with the reason, except in CI
(`CI=true`), where a missing browser is a failure: CI must really run them."""

from __future__ import annotations

import html
import os
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import ROOT, free_port, unavailable

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "artifacts" / "e2e"
TIMEOUT_MS = 60_000  # generous: a loaded 2-core machine runs several suites at once


def browser_unavailable(reason: str) -> None:
    unavailable(reason, "the real-browser tests")


@pytest.fixture(scope="session")
def chromium():
    """A headless Debian Chromium, shared by the session's tests (each test gets a fresh context)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("Playwright is not installed: make venv")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        browser_unavailable(
            f"Chromium not found at {CHROMIUM}{f' (there is one at {found}; set CHROMIUM_PATH)' if found else ''}: "
            "run scripts/ensure-chromium.sh (apt-get install chromium) or `make test`, which does it"
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=TIMEOUT_MS)
        yield browser
        browser.close()


class Shots:
    """Numbered screenshots of one test: artifacts/e2e/<test>/01-login.png, 02-consent.png ..."""

    def __init__(self, page, folder: Path):
        self.page, self.folder, self.count = page, folder, 0
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)

    def take(self, label: str, full_page: bool = True) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{re.sub(r'[^a-z0-9]+', '-', label.lower()).strip('-')}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


class PageProblems:
    """What the browser complained about: console errors (a CSP violation shows up here), script
    errors, and sub-resources (style sheet, icon) that failed. A page that needs an inline script,
    an inline style or a CDN fails the test. The page's own status (a 401 or 404 page that a test
    asked for) is not a problem."""

    def __init__(self, page):
        self.messages: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.messages.append(f"script error: {exc}"))
        page.on("requestfailed", self._request_failed)
        page.on("response", self._response)

    def _request_failed(self, request) -> None:
        """A sub-resource that did not load. Chromium cancels (net::ERR_ABORTED) what a page was
        still loading when a click or a form took the browser to the next page - the icon, say -
        which is the navigation's doing, not the page's; every other failure is the page's."""
        failure = request.failure or ""
        if "ERR_ABORTED" not in failure:
            self.messages.append(f"request failed: {request.url} ({failure})")

    def _console(self, msg) -> None:
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            self.messages.append(f"console: {msg.text}")

    def _response(self, response) -> None:
        if response.status >= 400 and response.request.resource_type != "document":
            self.messages.append(f"{response.status}: {response.url}")


@pytest.fixture
def context(chromium, request):
    ctx = chromium.new_context(viewport={"width": 1100, "height": 900}, locale="en-US")
    ctx.set_default_timeout(TIMEOUT_MS)
    ctx.set_default_navigation_timeout(TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context, request):
    page = context.new_page()
    page.problems = PageProblems(page)
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        try:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / request.node.name / "failed.png"), full_page=True)
        except Exception:
            pass


@pytest.fixture
def shots(page, request) -> Shots:
    return Shots(page, ARTIFACTS / request.node.name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report


# -- the relying party's callback page -----------------------------------------------------


class Callback:
    """A tiny web app at the redirect URI: it records what the provider sent back and shows it,
    as a relying party's /callback would before redeeming the code."""

    def __init__(self, port: int):
        self.port = port
        self.url = f"http://127.0.0.1:{port}/callback"
        self.received: list[dict[str, str]] = []

    def last(self) -> dict[str, str]:
        assert self.received, "the provider never sent the browser to the callback"
        return self.received[-1]

    def reset(self) -> None:
        self.received.clear()


def _handler(callback: Callback):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            parts = urlsplit(self.path)
            if parts.path == "/favicon.ico":
                self.send_response(204)
                self.end_headers()
                return
            if parts.path != "/callback":
                self.send_error(404)
                return
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            callback.received.append(params)
            rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in params.items())
            title = "Sign-in cancelled" if "error" in params else "Signed in"
            body = (
                f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{title} · Test App</title></head>"
                f"<body><h1>{title}</h1><p>The test app received:</p><table>{rows}</table></body></html>"
            )
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # keep the test output quiet
            pass

    return Handler


@pytest.fixture(scope="session")
def callback_server() -> Iterator[Callback]:
    port = free_port()
    callback = Callback(port)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(callback))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield callback
    server.shutdown()
    server.server_close()


@pytest.fixture
def callback(callback_server) -> Callback:
    callback_server.reset()
    return callback_server
