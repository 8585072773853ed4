"""The catalog can never starve the sign-in (issue 47): what every catalog call (the key door's
`/v1` and `/embed/v1` requests, the tool server's key calls) passes through.

- **A slot.** At most `CATALOG_CONCURRENCY` catalog calls run at once in a process; the next one is
  refused at once (`CatalogBusy`), never queued. A process serves its requests on `WEB_THREADS`
  threads (serve.py); with fewer catalog slots than threads, a sign-in request - discovery, the
  token endpoint, userinfo, the pages - always finds a thread that no catalog call holds, however
  many searches are sent. The slot is taken before the key is even looked up, so a refusal costs
  next to nothing, spends none of the key's budget and is not metered.
- **A time bound.** Every statement of the call is bounded by `CATALOG_STATEMENT_TIMEOUT_MS`
  (app/store/time_bound.py); one that runs past it ends the call (`StatementTimeout`), its work
  rolled back. The sign-in's statements never carry the bound.

Both refusals are the caller's to retry (the web layer answers 503 with `Retry-After`); neither
is a call on the meter: nobody pays for the service being busy or too slow."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from app.store.time_bound import StatementTimeout, bounded

__all__ = ["CatalogBusy", "CatalogGuard", "StatementTimeout"]


class CatalogBusy(Exception):
    """Every catalog slot of this process is taken: the call is refused, not queued."""


class CatalogGuard:
    """A process's catalog slots and the time bound of each call."""

    def __init__(self, slots: int, bound_ms: int) -> None:
        """`slots`: catalog calls at once in this process (0: no limit); `bound_ms`: the longest
        a statement of a call may run (0: no bound)."""
        self.slots, self.bound_ms = slots, bound_ms
        self._free = threading.BoundedSemaphore(slots) if slots > 0 else None
        self._lock = threading.Lock()
        self._running = 0

    @property
    def running(self) -> int:
        """Catalog calls inside the guard in this process now."""
        return self._running

    @contextmanager
    def call(self) -> Iterator[None]:
        """One catalog call: a slot (or CatalogBusy at once), its statements bounded (or
        StatementTimeout); the slot is given back however the call ends."""
        if self._free is not None and not self._free.acquire(blocking=False):
            raise CatalogBusy
        with self._lock:
            self._running += 1
        try:
            with bounded(self.bound_ms):
                yield
        finally:
            with self._lock:
                self._running -= 1
            if self._free is not None:
                self._free.release()
