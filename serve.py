"""The production servers: granian serving `wsgi:app` (`python serve.py`, which `make serve` runs)
and, beside it on a port of its own, the hosted tool server (app/web/toolserver/, granian in ASGI mode:
the MCP SDK's transport is ASGI, the provider's sign-in stays WSGI). `python serve.py tools` runs
the tool server alone (a process of its own, for an operator who runs them apart).

Why granian rather than gunicorn: every sign-in request pays the HTTP server's own cost before
Flask sees it. On the benchmark (docs/performance.md), a Flask "hello" costs about half the CPU per
request under granian (HTTP parsing and connection handling in Rust, on hyper) that it costs under
gunicorn's gthread worker (parsing in Python); the provider's cheap endpoints (discovery, the key
set, userinfo) are dominated by that difference.

Every number comes from the environment, with defaults for a small machine:

  WEB_BIND              address to listen on (host:port)                           127.0.0.1:8000
  WEB_CONCURRENCY       worker processes                                           CPUs
  WEB_THREADS           threads per worker running the app (at most DATABASE_POOL_SIZE) 2
  WEB_GRACEFUL_TIMEOUT  seconds a worker may finish its requests on stop/reload     30
  WEB_KEEPALIVE         seconds an idle keep-alive connection is held, and the most a client
                        may take to send a request's headers (1 to 60)              30
  WEB_WORKERS_MAX_RSS   MiB of memory after which a worker is replaced (0 = never)  0
  PROMETHEUS_MULTIPROC_DIR  where the workers share their metrics          a fresh temporary folder
  METRICS_BIND          host:port of a port of its own for /metrics, served by this
                        (the master) process from the workers' files; keep it private   none
  MCP_BIND              address the tool server listens on (host:port); `off` or empty:
                        not started. Its public URL is MCP_URL (app/core/config.py)         127.0.0.1:8001
  MCP_CONCURRENCY       the tool server's worker processes                              CPUs

Two threads per worker by default, and no more: the app's requests are short and mostly CPU, so
threads of one process mostly wait for its interpreter lock, and switching between them costs CPU:
`make bench` (docs/performance.md) found more CPU per refresh at 8 concurrent clients with 4 threads
than with 1, on SQLite and on a local PostgreSQL alike, with fewer requests served and a longer p99.
But one thread is not enough once the catalog shares the worker: a search holding a worker's only
thread made every sign-in request behind it wait (issue 47). The server runs at most
CATALOG_SEARCH_CONCURRENCY searches at once (1 by default; app/services/catalog_guard.py: its
workers and its tool server share the slots, through files in CATALOG_SLOTS_DIR, a fresh folder
made here), so with one thread more than that a sign-in request always finds a thread no search
holds; the start warns when WEB_THREADS leaves no such thread. Raise WEB_THREADS when the database is far enough
away that a request spends much of its time waiting for it.

Workers keep no state (sessions, codes, tokens, keys all live in the database and keys/), so
any number of them, on any number of machines, serve one issuer; a worker that dies is replaced.
Logs are JSON on stderr; the access line per request is written by the app itself (app/core/logs.py:
it knows the endpoint, the client and the request id), so granian's own access log stays off.
granian rewrites nothing from X-Forwarded-* headers: proxies are trusted only through the app's
ProxyFix (TRUSTED_PROXY_HOPS).

This file does not build the app: the workers do, each in its own process.
"""

from __future__ import annotations

import logging
import logging.config
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from granian import Granian
from granian.constants import Interfaces
from granian.http import HTTP1Settings
from granian.log import LogLevels

ROOT = Path(__file__).resolve().parent

# granian's own loggers write JSON to stderr like the app's (app/core/logs.py); the app adds its own
# handler to the root logger in each worker, so these do not propagate (no line is written twice).
JSON_LOGGING: dict[str, Any] = {
    "formatters": {
        "json": {"()": "app.core.logs.env_formatter"},  # the app's own format (JSON; LOG_STYLE=text: lines)
    },
    "handlers": {"json": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
    "loggers": {
        "_granian": {"handlers": ["json"], "level": "INFO", "propagate": False},
        "granian.access": {"handlers": ["json"], "level": "INFO", "propagate": False},
    },
}


DEFAULT_THREADS = 2  # per worker: see the module docstring

# gunicorn's settings that granian has no use for: said once at start, so an operator who set them
# is not left believing they still apply.
RETIRED = {
    "WEB_TIMEOUT": "granian does not kill a worker for a slow request",
    "WEB_MAX_REQUESTS": "to replace workers against a leak, set WEB_WORKERS_MAX_RSS (MiB)",
}


def catalog_thread_warning(environ: os._Environ | dict = os.environ) -> str | None:
    """A line when the catalog may hold every thread of a worker (WEB_THREADS at most
    CATALOG_SEARCH_CONCURRENCY, which is not 0): a sign-in request may then wait behind searches."""
    threads = int(environ.get("WEB_THREADS") or DEFAULT_THREADS)
    catalog = int(environ.get("CATALOG_SEARCH_CONCURRENCY") or 1)
    if catalog and threads <= catalog:
        return (
            f"WEB_THREADS={threads} with CATALOG_SEARCH_CONCURRENCY={catalog}: searches may take every thread of a "
            "worker and sign-in requests wait behind them; keep WEB_THREADS above CATALOG_SEARCH_CONCURRENCY"
        )
    return None


def retired_settings(environ: os._Environ | dict = os.environ) -> list[str]:
    """One line for each gunicorn-era WEB_* variable that is set but no longer read."""
    return [f"{name} is set but no longer used: {why}" for name, why in RETIRED.items() if environ.get(name)]


def server_options(environ: os._Environ | dict = os.environ) -> dict[str, Any]:
    """granian's settings from the WEB_* variables (see the module docstring)."""
    host, _, port = (environ.get("WEB_BIND") or "127.0.0.1:8000").rpartition(":")
    max_rss = int(environ.get("WEB_WORKERS_MAX_RSS") or 0)
    keepalive = int(environ.get("WEB_KEEPALIVE") or 30)
    if not 1 <= keepalive <= 60:
        raise SystemExit(f"WEB_KEEPALIVE must be between 1 and 60 seconds, not {keepalive}")
    return {
        "target": "wsgi:app",
        "interface": Interfaces.WSGI,
        "address": host.strip("[]") or "127.0.0.1",
        "port": int(port),
        "workers": int(environ.get("WEB_CONCURRENCY") or os.cpu_count() or 1),
        "blocking_threads": int(environ.get("WEB_THREADS") or DEFAULT_THREADS),
        "workers_kill_timeout": int(environ.get("WEB_GRACEFUL_TIMEOUT") or 30),
        "workers_max_rss": max_rss or None,
        "respawn_failed_workers": True,
        # hyper closes a connection that sends no complete request headers within this time: an
        # idle keep-alive connection as well as a client trickling its headers in.
        "http1_settings": HTTP1Settings(header_read_timeout=keepalive * 1000),
        "websockets": False,
        "log_access": False,
        "log_level": LogLevels((environ.get("LOG_LEVEL") or "info").lower()),
        "log_dictconfig": JSON_LOGGING,
        "working_dir": ROOT,
    }


DEFAULT_MCP_BIND = "127.0.0.1:8001"


def _address(bind: str, name: str) -> tuple[str, int]:
    host, _, port = bind.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SystemExit(f"{name} must be host:port, such as 127.0.0.1:8001, not {bind!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def tool_server_bind(environ: os._Environ | dict = os.environ) -> tuple[str, int] | None:
    """MCP_BIND as (host, port); None when the tool server is switched off."""
    bind = environ.get("MCP_BIND", DEFAULT_MCP_BIND).strip()
    if bind.lower() in ("", "off", "false", "0", "no"):
        return None
    return _address(bind, "MCP_BIND")


def tool_server_options(environ: os._Environ | dict = os.environ) -> dict[str, Any]:
    """granian's settings for the tool server: the provider's, in ASGI mode with the app built by
    a factory in each worker, at MCP_BIND with MCP_CONCURRENCY workers (one event loop each: a
    tool call's reads run in it, as a /v1 request's on the provider's one thread per worker)."""
    options = server_options(environ)
    address = tool_server_bind(environ)
    if address is None:
        raise SystemExit("MCP_BIND is off: no tool server to start")
    del options["blocking_threads"]
    return {
        **options,
        "target": "asgi:create_tool_server",
        "factory": True,
        "interface": Interfaces.ASGI,
        "address": address[0],
        "port": address[1],
        "workers": int(environ.get("MCP_CONCURRENCY") or os.cpu_count() or 1),
    }


def _die_with_parent() -> None:
    """In the tool server's process, before it runs: stop when serve.py's process dies, however
    it dies (Linux's parent-death signal), rather than serve on alone."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: stopped by serve.py's own exit instead
        pass


def start_tool_server(log: logging.Logger) -> subprocess.Popen:
    """`serve.py tools` as a child process. If it stops while the provider serves, the provider
    stops too, so that whatever supervises serve.py restarts both (a half-served platform is not
    left running)."""
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and file
        [sys.executable, str(ROOT / "serve.py"), "tools"],
        cwd=ROOT,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - no thread runs yet
    )

    def watch() -> None:
        if child.wait() != 0 and not stopping.is_set():
            log.error("the tool server stopped (exit %s): stopping the provider too", child.returncode)
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="tool-server-watch", daemon=True).start()
    return child


stopping = threading.Event()


def stop(child: subprocess.Popen, timeout: int) -> None:
    stopping.set()
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()


def fresh_metrics_dir() -> tuple[Path, bool]:
    """PROMETHEUS_MULTIPROC_DIR, set before any worker imports prometheus_client, and emptied:
    files left by a previous run would be added to this one's. True when the folder is our own
    (removed again on exit)."""
    own = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if own:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="credits-id-metrics-")
    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    return folder, own


def fresh_slots_dir() -> tuple[Path, bool]:
    """CATALOG_SLOTS_DIR, where the workers and the tool server share their search slots
    (app/core/slots.py): a fresh folder unless one is set. True when it is our own (removed on exit)."""
    own = not os.environ.get("CATALOG_SLOTS_DIR")
    if own:
        os.environ["CATALOG_SLOTS_DIR"] = tempfile.mkdtemp(prefix="credits-id-slots-")
    return Path(os.environ["CATALOG_SLOTS_DIR"]), own


def metrics_address(environ: os._Environ | dict = os.environ) -> tuple[str, int] | None:
    """METRICS_BIND as (host, port), or None when unset or metrics are off. A malformed value stops
    the start: a scraper silently finding nothing is worse."""
    bind = (environ.get("METRICS_BIND") or "").strip()
    if not bind or (environ.get("METRICS_ENABLED") or "true").strip().lower() in ("false", "0", "no", "off"):
        return None
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SystemExit(f"METRICS_BIND must be host:port, such as 127.0.0.1:9464, not {bind!r}")
    return host.strip("[]"), int(port)


def serve_metrics(address: tuple[str, int]) -> None:
    """Prometheus' own small HTTP server on METRICS_BIND, in this process (granian's workers are
    other processes): every scrape adds up the workers' files, as /metrics does on the main port.
    Imported here, after PROMETHEUS_MULTIPROC_DIR is set: prometheus_client reads it at import."""
    from prometheus_client import start_http_server

    from app.core.metrics import registry

    host, port = address
    start_http_server(port, addr=host, registry=registry())


def check_config() -> None:
    """Refuse to start, in one line, before any worker is forked: each worker would otherwise
    fail on its own with a traceback, and granian would keep respawning them."""
    from app.core.config import ConfigError, check_settings, load_settings, refusal

    try:
        check_settings(load_settings())
    except ConfigError as exc:
        raise refusal(exc) from None


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    check_config()
    log = logging.getLogger("credits_id.serve")
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            **JSON_LOGGING,
            "loggers": {"credits_id.serve": {"handlers": ["json"], "level": "INFO"}},
        }
    )
    if argv == ["tools"]:
        Granian(**tool_server_options()).serve()
        return
    if argv:
        raise SystemExit("usage: serve.py [tools]")
    for line in retired_settings():
        log.warning(line)
    if (line := catalog_thread_warning()) is not None:
        log.warning(line)
    metrics_at = metrics_address()
    folder, own = fresh_metrics_dir()
    slots, own_slots = fresh_slots_dir()  # before the workers and the tool server start: they inherit it
    tools = None
    try:
        if metrics_at is not None:
            serve_metrics(metrics_at)
            log.info("metrics served on %s:%d", *metrics_at)
        options = server_options()
        if tool_server_bind() is not None:
            tools = start_tool_server(log)
            log.info("tool server on %s:%d", *tool_server_bind())
        Granian(**options).serve()
    finally:
        if tools is not None:
            stop(tools, int(os.environ.get("WEB_GRACEFUL_TIMEOUT") or 30))
        if own:
            shutil.rmtree(folder, ignore_errors=True)
        if own_slots:
            shutil.rmtree(slots, ignore_errors=True)


if __name__ == "__main__":
    main()
