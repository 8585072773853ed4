"""The edge of a key's recent requests (app/services/key_activity.py says what is kept and why):
each request that came with a known key becomes an entry as it ends, and the entries are written
in batches, away from the requests.

- `/v1` and `/embed/v1`: one app-wide after-request hook (`init_key_activity`), after the view and
  the gateway are done, so it sees the final status and, for a refusal, its message. The gateway
  has already named a live key for the access line (`logs.note_key`). A value the door refused is
  kept as its SHA-256 until the batch is written, which finds in one lookup whose each such value
  is (revoked, paused, a rotated-out value past its grace: still a key's) and drops the others
  (mistyped, made up: nobody's). A refusal costs its request no lookup of its own.
- The tool server records each HTTP request through its door the same way (`record`), naming the
  tool of a tool call.

A process keeps its entries in memory (at most PENDING_LIMIT: should the writer fall behind, the
oldest go first; a batch the database refuses is logged and dropped) and a thread of its own writes them every KEY_ACTIVITY_FLUSH_SECONDS in one transaction:
the request pays for an append to a list, and the table gets one multi-row INSERT and one trim per
key per batch rather than a write per request. The key page writes its own process's entries before
it reads, so a developer sees their last call at once when the same process serves both; another
process's appear within a flush interval. A process that is killed loses at most that interval's
entries - the access log, written as each request ends, stays the full trail (the spec's data-use
term 7). KEY_ACTIVITY_FLUSH_SECONDS=0 writes each request's entry once its response is sent."""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import deque
from typing import Any

from flask import Flask, Response, current_app, g, request

from app.models import ApiKey
from app.services.apikeys import WORKSPACE_PREFIX
from app.services.key_activity import (
    API,
    TOOLS,
    WIDGET,
    Entry,
    KeyRequestRecord,
    entry,
    recent,
    refused_value_digest,
    save,
)
from app.store.unit_of_work import commit
from app.web.api.gateway import API_KEY_HEADER

EXTENSION = "credits_id.key_activity"
PENDING_LIMIT = 10_000  # entries a process holds while the database is away; the oldest go first
log = logging.getLogger(__name__)


class Recorder:
    """One app's pending entries in this process, and the thread that writes them."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.keep = int(app.config["KEY_ACTIVITY_KEEP"])
        self.interval = float(app.config["KEY_ACTIVITY_FLUSH_SECONDS"])
        self._begin()

    def _begin(self) -> None:
        """A fresh state for this process (a forked worker starts here: its parent's entries and
        thread are the parent's)."""
        self.pid = os.getpid()
        self.pending: deque[Entry] = deque(maxlen=PENDING_LIMIT)
        self.writing = threading.Lock()  # one batch at a time
        self.starting = threading.Lock()
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()

    @property
    def enabled(self) -> bool:
        return self.keep > 0

    def add(self, item: Entry) -> None:
        """Keep `item` until the next batch (an append: what a request pays)."""
        if self.pid != os.getpid():
            self._begin()
        self.pending.append(item)
        if self.thread is None and self.interval > 0:
            self._start()

    def _start(self) -> None:
        with self.starting:
            if self.thread is not None:
                return
            self.thread = threading.Thread(target=self._run, name="key-activity", daemon=True)
            self.thread.start()
            atexit.register(self.flush)  # a worker that stops in good order writes what it holds

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            self.flush()

    def stop(self) -> None:
        """End the writing thread after what it holds is written (a test's recorder; a process
        that ends writes what it holds at exit)."""
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()
        self.flush()

    def flush(self) -> int:
        """Write what this process holds, in one transaction of its own; how many entries the
        batch held (0: none, or the batch failed). A failure is logged and the batch dropped (the
        access log has every request)."""
        with self.writing:
            batch: list[Entry] = []
            while True:
                try:
                    batch.append(self.pending.popleft())
                except IndexError:
                    break
            if not batch:
                return 0
            try:
                with self.app.app_context():
                    save(batch, self.keep)
                    commit()
            except Exception as exc:
                log.warning("key activity: %d entries not written: %s: %s", len(batch), type(exc).__name__, exc)
                return 0
            return len(batch)


def recorder(app: Flask | None = None) -> Recorder:
    """The app's recorder in this process."""
    chosen: Recorder = (app or current_app).extensions[EXTENSION]
    return chosen


def record(
    status: int,
    message: str | None,
    surface: str,
    key: dict[str, str] | None,
    tool: str | None = None,
    response: Response | None = None,
) -> None:
    """Keep an entry for the current request, answered with `status` (`message`: its refusal's).
    `key`: the live key the door named ({key_id, key_prefix}, the access line's); without one, the
    value sent is kept as its hash, and the batch finds whose it is (a revoked key's, a paused
    key's, a rotated-out one's) or drops it (nobody's): no lookup on the request's time."""
    chosen = recorder()
    value = request.headers.get(API_KEY_HEADER) or ""
    if not chosen.enabled or value.startswith(WORKSPACE_PREFIX):
        return  # a workspace key's page is its member's account page, which lists no requests
    digest = None
    if key is None:
        digest = refused_value_digest(value)
        if digest is None:
            return  # not even a key's shape: nobody's
    chosen.add(
        entry(
            key["key_id"] if key is not None else None,
            surface,
            request.method,
            request.path,
            status,
            g.get("request_id") or "",
            message,
            tool,
            digest=digest,
        )
    )
    if chosen.interval <= 0:
        if response is not None:
            response.call_on_close(chosen.flush)  # once the answer is sent
        else:
            chosen.flush()


def refusal_message(response: Response) -> str | None:
    """What a refused answer says: the gateway's `message`, or the API envelope's with the
    parameter it names (`param`)."""
    body: Any = response.get_json(silent=True) if response.is_json else None
    if not isinstance(body, dict) or not isinstance(body.get("message"), str):
        return None
    param = body.get("param")
    return f"{body['message']} ({param})" if isinstance(param, str) and param else body["message"]


def _surface() -> str | None:
    """The key door a path is behind (None: not one, or the widget's static script)."""
    path = request.path
    if path == "/v1" or path.startswith("/v1/"):
        return API
    if path.startswith("/embed/v1/") and not path.startswith("/embed/v1/widget"):
        return WIDGET
    return None


def _after_api_request(response: Response) -> Response:
    if API_KEY_HEADER not in request.headers or request.method == "OPTIONS":
        return response
    surface = _surface()
    if surface is None:
        return response
    status = response.status_code
    record(status, refusal_message(response) if status >= 400 else None, surface, g.get("log_key"), response=response)
    return response


def record_tool_request(status: int, message: str | None, tool: str | None) -> None:
    """The tool server's hook (app/web/toolserver/door.py): one entry per request through its door
    that came with a key, inside the Flask request context the door opened."""
    if API_KEY_HEADER in request.headers:
        record(status, message, TOOLS, g.get("log_key"), tool)


def recent_requests(key: ApiKey) -> list[KeyRequestRecord]:
    """The key's recent requests for its page: this process's pending entries written first."""
    chosen = recorder()
    chosen.flush()
    return recent(key, chosen.keep) if chosen.enabled else []


def init_key_activity(app: Flask) -> None:
    """Register the recorder and the `/v1` hook."""
    app.extensions[EXTENSION] = Recorder(app)
    app.after_request(_after_api_request)
