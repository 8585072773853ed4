"""Structured logs: one JSON object per line, and every line written while serving a request
carries that request's id.

The request id is taken from an incoming `X-Request-Id` (when it looks like an id, so a caller
cannot inject text into the logs) or made fresh, and is echoed in the response, so a support
request, a proxy's log and ours can be matched. Each request ends with one access line: method,
path (never the query string: it may carry an ID token as `id_token_hint`), endpoint, status,
latency, client id and a keyed hash of the member id; through a key door (the catalog API, the
widgets), the key's id and its clear prefix (`key_id`, `key_prefix`, as the tool server's lines
carry them: a call is traceable to its key, the spec's data-use term 7). Nothing else about the
member, and never a secret, code or token, is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import sys
import time
import uuid
from typing import Any

from flask import Flask, Response, current_app, g, has_app_context, request
from pythonjsonlogger.json import JsonFormatter
from werkzeug.wrappers import Request

access_log = logging.getLogger("credits_id.access")
events_log = logging.getLogger("credits_id.events")

REQUEST_ID_HEADER = "X-Request-Id"
# What a caller's id may look like to be echoed and logged: short printable ASCII, no spaces or
# quotes (URL-safe and standard base64 ids included). Anything else is replaced by a fresh id.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
RENAMED = {"asctime": "time", "levelname": "level", "name": "logger"}


# Where the front (app/protocol/front.py) leaves the request id, so Flask's hooks use the same one.
REQUEST_ID_KEY = "credits_id.request_id"


class RequestContextFilter(logging.Filter):
    """Stamps the current request's id on every record logged while the request is served (in
    Flask, or at the front, which serves a request in an app context of its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if has_app_context() and "request_id" in g and not hasattr(record, "request_id"):
            record.request_id = g.request_id
        return True


def json_formatter() -> JsonFormatter:
    return JsonFormatter(LOG_FORMAT, rename_fields=RENAMED, datefmt="%Y-%m-%dT%H:%M:%S%z")


# The standard attributes of every LogRecord: what is not one of these was passed as `extra`.
_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "request_id"}


class ReadableFormatter(logging.Formatter):
    """One short line per record for a person at a terminal (`make run`; LOG_STYLE=text): a request
    as `14:05:09  GET /console/apps -> 200  12.4 ms  app=demo-web-app`, anything else as
    `14:05:09  WARNING logger: message key=value`. The same fields as the JSON lines, never more
    (no query string, no secret); production keeps JSON, which machines read."""

    def format(self, record: logging.LogRecord) -> str:
        when = self.formatTime(record, "%H:%M:%S")
        if record.name == access_log.name and hasattr(record, "path"):
            d = record.__dict__
            latency = f"{d['latency_ms']:.1f} ms" if d.get("latency_ms") is not None else ""
            client = f"app={d['client_id']}" if d.get("client_id") else ""
            line = f"{when}  {d['method']:<6} {d['path']} -> {d['status']}  {latency}  {client}".rstrip()
        else:
            extras = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in _RECORD_FIELDS)
            line = f"{when}  {record.levelname} {record.name}: {record.getMessage()} {extras}".rstrip()
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def env_formatter() -> logging.Formatter:
    """The format LOG_STYLE names, for loggers configured before the app exists (granian's own,
    serve.py): JSON unless `text`."""
    return ReadableFormatter() if os.environ.get("LOG_STYLE") == "text" else json_formatter()


def app_handler() -> logging.Handler | None:
    """The JSON handler configure_logging put on the root logger, if it has (others, such as a test
    runner's capture, may sit beside it)."""
    return next((h for h in logging.getLogger().handlers if getattr(h, "_credits_id", False)), None)


def configure_logging(level: str = "INFO", style: str = "json") -> None:
    """Send every log record to stderr as JSON, or as readable lines with `style="text"` (a
    development terminal); once per process, idempotent."""
    root = logging.getLogger()
    if app_handler() is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(ReadableFormatter() if style == "text" else json_formatter())
        handler.addFilter(RequestContextFilter())
        handler._credits_id = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # chatter on every start
    # The development server (`flask run`, `make run`) logs each request line with its query
    # string, which may hold an id_token_hint or a login_hint; the access line above (path only)
    # already records every request, so only its warnings and errors are kept.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)


def member_hash(user_id: str | None) -> str | None:
    """A keyed hash of the member id: lines of one member can be linked without naming them."""
    if not user_id:
        return None
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, f"member:{user_id}".encode(), hashlib.sha256).hexdigest()[:16]


def note(client_id: str | None = None, user_id: str | None = None) -> None:
    """Tell the access line which app and member the request was about (set by the hooks). The
    request's app context holds them: Flask's, or the one the front opens for a request."""
    if not has_app_context():
        return
    if client_id:
        g.log_client_id = str(client_id)[:64]
    if user_id:
        g.log_user_id = str(user_id)


def note_key(key_id: str, prefix: str) -> None:
    """Tell the access line which API key the request came with (its id and clear prefix only)."""
    if has_app_context():
        g.log_key = {"key_id": key_id, "key_prefix": prefix}


def event(message: str, **fields: Any) -> None:
    """One line for a notable event (login failed, code reuse...), with the request's context."""
    extra = {k: v for k, v in fields.items() if v is not None}
    events_log.info(message, extra=extra)


def request_id_for(incoming: str | None) -> str:
    """The caller's X-Request-Id when it looks like an id, else a fresh one."""
    return incoming if incoming and REQUEST_ID_PATTERN.fullmatch(incoming) else uuid.uuid4().hex


def write_access_line(
    *,
    method: str,
    path: str,
    endpoint: str | None,
    status: int,
    latency_ms: float | None,
    client_id: str | None,
    member: str | None,
    remote_addr: str | None,
    request_id: str,
    key: dict[str, str] | None = None,
) -> None:
    """The one access line per request (from Flask's hook, or the published-documents front)."""
    access_log.info(
        "request",
        extra={
            "method": method,
            "path": path,
            "endpoint": endpoint,
            "status": status,
            "latency_ms": latency_ms,
            "client_id": client_id,
            "member": member,
            "remote_addr": remote_addr,
            "request_id": request_id,
            **(key or {}),
        },
    )


def request_id_of(environ: dict[str, Any]) -> str:
    """The request's id, made once per request: by the front when it saw the request first."""
    if REQUEST_ID_KEY not in environ:
        environ[REQUEST_ID_KEY] = request_id_for(environ.get("HTTP_X_REQUEST_ID"))
    request_id: str = environ[REQUEST_ID_KEY]
    return request_id


def _start_request() -> None:
    g.request_started = time.perf_counter()
    g.pop("log_key", None)  # a context kept across requests (a test's) must not lend the last one's key
    g.request_id = request_id_of(request.environ)


def client_id_of(req: Request) -> str | None:
    """The app the request came from: authenticated (hooks/signals, through note()), else what it
    claimed."""
    if "log_client_id" in g:
        noted: str = g.log_client_id
        return noted
    try:
        claimed = req.args.get("client_id") or (req.authorization.username if req.authorization else None)
        if not claimed and req.mimetype == "application/x-www-form-urlencoded":
            claimed = req.form.get("client_id")
    except Exception:  # a malformed request was already answered; the log line must not fail
        claimed = None
    return str(claimed)[:64] if claimed else None


def member_of_request() -> str | None:
    """The keyed hash of the member the request was about (note()'s: the session lookup, the
    grants, the API)."""
    return member_hash(g.get("log_user_id"))


def _finish_request(response: Response) -> Response:
    request_id = g.get("request_id") or uuid.uuid4().hex
    response.headers[REQUEST_ID_HEADER] = request_id
    started = g.get("request_started")
    latency_ms = round((time.perf_counter() - started) * 1000, 2) if started else None
    g.request_latency = (latency_ms or 0) / 1000
    write_access_line(
        method=request.method,
        path=request.path,
        endpoint=request.url_rule.endpoint if request.url_rule else None,
        status=response.status_code,
        latency_ms=latency_ms,
        client_id=client_id_of(request),
        member=member_of_request(),
        remote_addr=request.remote_addr,
        request_id=request_id,
        key=g.get("log_key"),
    )
    return response


def init_logging(app: Flask) -> None:
    configure_logging(app.config["LOG_LEVEL"], app.config["LOG_STYLE"])
    # First of all before_request functions, so a request refused by an earlier hook (CSRF)
    # still has its id and start time.
    app.before_request_funcs.setdefault(None, []).insert(0, _start_request)
    app.after_request(_finish_request)
