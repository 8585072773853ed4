"""The production servers: granian serving `wsgi:app` (`python serve.py`, which `make serve` runs)
and, beside it on a port of its own, the hosted tool server (app/web/toolserver/, granian in ASGI mode:
the MCP SDK's transport is ASGI, the provider's sign-in stays WSGI) and, when CATALOG_BIND is set,
the catalog pool (below). `python serve.py tools` and `python serve.py catalog` run one of them
alone (a process of its own, for an operator who runs them apart).

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
  CATALOG_BIND          address of the catalog pool (host:port): the same app in worker
                        processes of their own, for a proxy in front to send `/v1/` and
                        `/embed/v1/` to; `off` or empty: none (the workers above serve all)  off
  CATALOG_CONCURRENCY   the catalog pool's worker processes                             1
  CATALOG_NICE          how much less CPU priority the catalog pool and the tool server
                        get than the sign-in's workers (0-19, as nice(1))                10
  CATALOG_CPUS          the CPUs the catalog pool and the tool server run on ("1", "2-3",
                        "0,2"); the sign-in's workers run on the others. Empty: all share
                        every CPU (Linux only)                                           empty

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

The catalog pool (CATALOG_BIND) keeps the catalog's requests off the sign-in's workers altogether.
The guard above keeps a search from holding every thread, but the searches' work still runs in the
same processes as the sign-in: a sign-in request waits for the interpreter lock a search's thread
holds, and for a core while the searches' processes use them. With the pool, `/v1/` and
`/embed/v1/` arrive (through the proxy) at processes of their own, which run - with the tool
server - at a lower CPU priority (CATALOG_NICE): where they share cores with the sign-in, the
kernel gives a waiting sign-in request the core first. The pool shares the search slots and the
statement bound; the provider's port still answers `/v1/` too, so a deployment without the proxy
rule loses nothing (docs/operating.md; bench/starvation.py measures both).

CATALOG_CPUS gives the catalog cores of its own. A lower priority is not enough where the sign-in's
requests take a millisecond or less: bench/starvation.py found that neither CATALOG_NICE, nor the
kernel's idle class, nor short scheduler slices for the sign-in kept its p99 beside a saturated
catalog within twice the idle one, and that halving the catalog's share of a core made it worse:
what the sign-in loses is not CPU time but a core to itself (most likely the caches a search
fills, and where the kernel wakes a request). With the catalog pool and the tool server on their
own CPUs (sched_setaffinity, which their workers and threads inherit) and the sign-in's workers on
the others, it stayed within 1.4 times with requests back to back; requests spaced apart also
need the catalog's database sessions off the sign-in's cores, which serve.py cannot pin: a read
replica started on the catalog's CPUs does it (CATALOG_DATABASE_URL, app/store/catalog_database.py;
docs/performance.md). The price: the sign-in has only the other cores, so give the catalog the
fewest that serve its searches.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

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


def _switchable_address(bind: str, name: str) -> tuple[str, int] | None:
    """A server's host:port setting; None when it says the server is off (`off`, empty, ...)."""
    bind = bind.strip()
    if bind.lower() in ("", "off", "false", "0", "no"):
        return None
    return _address(bind, name)


def tool_server_bind(environ: os._Environ | dict = os.environ) -> tuple[str, int] | None:
    """MCP_BIND as (host, port); None when the tool server is switched off."""
    return _switchable_address(environ.get("MCP_BIND", DEFAULT_MCP_BIND), "MCP_BIND")


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


DEFAULT_CATALOG_NICE = 10


def catalog_pool_bind(environ: os._Environ | dict = os.environ) -> tuple[str, int] | None:
    """CATALOG_BIND as (host, port); None when the catalog has no pool of its own (the default)."""
    return _switchable_address(environ.get("CATALOG_BIND") or "", "CATALOG_BIND")


def catalog_pool_options(environ: os._Environ | dict = os.environ) -> dict[str, Any]:
    """granian's settings for the catalog pool: the provider's own (the same app, WSGI, WEB_THREADS
    threads a worker) at CATALOG_BIND, with CATALOG_CONCURRENCY workers."""
    address = catalog_pool_bind(environ)
    if address is None:
        raise SystemExit("CATALOG_BIND is off: no catalog pool to start")
    return {
        **server_options(environ),
        "address": address[0],
        "port": address[1],
        "workers": int(environ.get("CATALOG_CONCURRENCY") or 1),
    }


def catalog_niceness(environ: os._Environ | dict = os.environ) -> int:
    """CATALOG_NICE: the niceness the catalog pool and the tool server start with."""
    raw = (environ.get("CATALOG_NICE") or str(DEFAULT_CATALOG_NICE)).strip()
    if not raw.isdigit() or not 0 <= int(raw) <= 19:
        raise SystemExit(f"CATALOG_NICE must be a whole number from 0 to 19, not {raw!r}")
    return int(raw)


class CpuSplit(NamedTuple):
    """CATALOG_CPUS: the catalog's CPUs, and the sign-in's (the others this process may run on)."""

    catalog: set[int]
    sign_in: set[int]


def catalog_cpus(environ: os._Environ | dict = os.environ) -> CpuSplit | None:
    """CATALOG_CPUS as the split of this process's CPUs; None when unset. A list the machine
    cannot honour stops the start."""
    raw = (environ.get("CATALOG_CPUS") or "").strip()
    if not raw:
        return None
    if not hasattr(os, "sched_setaffinity"):
        raise SystemExit("CATALOG_CPUS needs Linux (sched_setaffinity); leave it empty here")
    catalog: set[int] = set()
    for part in raw.split(","):
        first, dash, last = part.strip().partition("-")
        last = last if dash else first
        if not (first.isdigit() and last.isdigit()) or int(first) > int(last):
            raise SystemExit(f'CATALOG_CPUS must list CPUs such as "1", "2-3" or "0,2", not {raw!r}')
        catalog |= set(range(int(first), int(last) + 1))
    allowed = os.sched_getaffinity(0)
    if not catalog <= allowed or not allowed - catalog:
        raise SystemExit(
            f"CATALOG_CPUS={raw!r} must name CPUs this process may run on ({sorted(allowed)}) and leave at least "
            "one to the sign-in"
        )
    return CpuSplit(catalog, allowed - catalog)


def _as_catalog_child(niceness: int, cpus: set[int] | None) -> Callable[[], None]:
    """What a catalog process does before it runs (in the child, before exec): stop when serve.py's
    process dies, however it dies (Linux's parent-death signal), rather than serve on alone; and
    give up `niceness` of CPU priority and keep to `cpus` (None: any), which its granian workers
    inherit."""

    def prepare() -> None:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # not Linux: stopped by serve.py's own exit instead
            pass
        if niceness:
            os.nice(niceness)
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    return prepare


def start_child(log: logging.Logger, role: str, niceness: int, cpus: set[int] | None) -> subprocess.Popen:
    """`serve.py tools` or `serve.py catalog` as a child process. If it stops while the provider
    serves, the provider stops too, so that whatever supervises serve.py restarts all (a
    half-served platform is not left running)."""
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and file
        [sys.executable, str(ROOT / "serve.py"), role],
        cwd=ROOT,
        # Its database sessions named for it (libpq's PGAPPNAME): pg_stat_activity tells them apart.
        env={"PGAPPNAME": f"credits-id-{role}", **os.environ},
        preexec_fn=_as_catalog_child(niceness, cpus),  # noqa: PLW1509 - no thread runs yet
    )

    def watch() -> None:
        if child.wait() != 0 and not stopping.is_set():
            log.error("the %s server stopped (exit %s): stopping the provider too", role, child.returncode)
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name=f"{role}-watch", daemon=True).start()
    return child


def _cpu_list(cpus: set[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))


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
    if argv == ["catalog"]:
        Granian(**catalog_pool_options()).serve()
        return
    if argv:
        raise SystemExit("usage: serve.py [tools|catalog]")
    for line in retired_settings():
        log.warning(line)
    if (line := catalog_thread_warning()) is not None:
        log.warning(line)
    metrics_at = metrics_address()
    folder, own = fresh_metrics_dir()
    slots, own_slots = fresh_slots_dir()  # before the workers and the tool server start: they inherit it
    niceness = catalog_niceness()
    cpus = catalog_cpus()
    catalog_side = cpus.catalog if cpus is not None else None
    if cpus is not None and tool_server_bind() is None and catalog_pool_bind() is None:
        raise SystemExit(
            "CATALOG_CPUS names the catalog's CPUs, but neither CATALOG_BIND nor MCP_BIND starts a server there"
        )
    if cpus is not None:  # first: every thread and process started here inherits it (the catalog's set its own)
        os.sched_setaffinity(0, cpus.sign_in)
    children: list[subprocess.Popen] = []
    try:
        if metrics_at is not None:
            serve_metrics(metrics_at)
            log.info("metrics served on %s:%d", *metrics_at)
        options = server_options()
        if (tools_at := tool_server_bind()) is not None:
            children.append(start_child(log, "tools", niceness, catalog_side))
            log.info("tool server on %s:%d", *tools_at)
        if (catalog_at := catalog_pool_bind()) is not None:
            catalog_pool_options()  # a malformed setting stops the start here, not in the child
            children.append(start_child(log, "catalog", niceness, catalog_side))
            log.info("catalog pool on %s:%d", *catalog_at)
        if cpus is not None:
            log.info("catalog on CPUs %s, sign-in on CPUs %s", _cpu_list(cpus.catalog), _cpu_list(cpus.sign_in))
        Granian(**options).serve()
    finally:
        for child in children:
            stop(child, int(os.environ.get("WEB_GRACEFUL_TIMEOUT") or 30))
        if own:
            shutil.rmtree(folder, ignore_errors=True)
        if own_slots:
            shutil.rmtree(slots, ignore_errors=True)


if __name__ == "__main__":
    main()
