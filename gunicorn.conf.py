"""gunicorn settings for production: `gunicorn -c gunicorn.conf.py wsgi:app` (or `make serve`).

Every number comes from the environment, with defaults for a small machine:

  WEB_BIND              address to listen on                  127.0.0.1:8000
  WEB_CONCURRENCY       worker processes                      2 x CPUs + 1
  WEB_THREADS           threads per worker (gthread)          4
  WEB_TIMEOUT           seconds before a stuck worker is killed and replaced   30
  WEB_GRACEFUL_TIMEOUT  seconds a worker may finish its requests on stop/reload 30
  WEB_KEEPALIVE         seconds an idle keep-alive connection is held          5
  WEB_MAX_REQUESTS      requests before a worker is recycled (0 = never)        0
  PROMETHEUS_MULTIPROC_DIR  where the workers share their metrics   a fresh temporary folder

Workers keep no state (sessions, codes, tokens, keys all live in the database and keys/), so
any number of them, on any number of machines, serve one issuer. Logs are JSON on stderr; the
access line per request is written by the app itself (app/logs.py: it knows the endpoint, the
client and the request id), so gunicorn's own access log is off. Proxy headers are trusted
only through the app's ProxyFix (TRUSTED_PROXY_HOPS), never by gunicorn itself.

This file must not import the app: it runs in the master before any worker loads it.
"""

import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


bind = os.environ.get("WEB_BIND") or "127.0.0.1:8000"
worker_class = "gthread"
workers = _int("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1)
threads = _int("WEB_THREADS", 4)
timeout = _int("WEB_TIMEOUT", 30)
graceful_timeout = _int("WEB_GRACEFUL_TIMEOUT", 30)
keepalive = _int("WEB_KEEPALIVE", 5)
# No recycling by default: in multiprocess metrics mode every recycled worker leaves its counter
# files in PROMETHEUS_MULTIPROC_DIR, and /metrics reads them all until the master restarts (a
# known prometheus-client limit). Recycle only against a leak, and restart the master regularly.
max_requests = _int("WEB_MAX_REQUESTS", 0)
max_requests_jitter = max_requests // 10
preload_app = False  # each worker opens its own database connections after the fork

# Proxies: the app's ProxyFix decides (TRUSTED_PROXY_HOPS); gunicorn must not also rewrite the
# scheme from X-Forwarded-Proto on its own.
forwarded_allow_ips = "127.0.0.1,::1"
secure_scheme_headers = {}

# The control socket lives at one fixed path per user (~/.gunicorn): several servers on one
# machine would fight over it, and nothing here uses it.
control_socket_disable = True

accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            "datefmt": "%Y-%m-%dT%H:%M:%S%z",
        }
    },
    "handlers": {
        "json": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"},
        "null": {"class": "logging.NullHandler"},
    },
    # The app adds its own JSON handler to the root logger (with the request id); gunicorn's
    # loggers write JSON here and do not propagate, so no line is written twice.
    "root": {"level": "INFO", "handlers": []},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": ["json"], "propagate": False},
        "gunicorn.access": {"level": "INFO", "handlers": ["null"], "propagate": False},  # see above
    },
}

# Metrics in multiprocess mode: set before any worker imports prometheus_client.
_own_metrics_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _own_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="credits-id-metrics-")
_metrics_dir = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])


def on_starting(server) -> None:
    """Start with empty metrics: files left by a previous run would be added to this one's."""
    _metrics_dir.mkdir(parents=True, exist_ok=True)
    for entry in _metrics_dir.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def child_exit(server, worker) -> None:
    """A worker ended: keep its counters, drop its live-only values."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    if _own_metrics_dir:
        shutil.rmtree(_metrics_dir, ignore_errors=True)
