"""The catalog can never starve the sign-in (issue 47): what every catalog call (the key door's
`/v1` and `/embed/v1` requests, the tool server's calls) passes through.

- **A slot, for a search.** A search costs the database one to two orders of magnitude more than a
  lookup, and it is the call that can hold a thread for long. At most `CATALOG_SEARCH_CONCURRENCY`
  searches run at once in the whole server - serve.py's workers and its tool server share the
  slots (app/core/slots.py), so the searches' database work leaves the rest of the machine's cores
  to the sign-in - or in a process run without serve.py; the next one is refused at once
  (`CatalogBusy`), never queued. A process serves its requests on `WEB_THREADS` threads
  (serve.py); with fewer search slots than threads, a sign-in request - discovery, the token endpoint, userinfo, the pages -
  always finds a thread that no search holds, however many searches are sent. Lookups take no
  slot: each is an index read of a few milliseconds, which any request may wait behind, and the
  time bound below caps one that is not. A slot is taken before the key is even looked up, so a
  refusal costs next to nothing, spends none of the key's budget and is not metered.
- **A time bound, for every call.** Every statement of a catalog call is bounded by
  `CATALOG_STATEMENT_TIMEOUT_MS` (app/store/time_bound.py); one that runs past it ends the call
  (`StatementTimeout`), its work rolled back. The sign-in's statements never carry the bound.

Both refusals are the caller's to retry (the web layer answers 503 with `Retry-After`); neither
is a call on the meter: nobody pays for the service being busy or too slow."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.core.slots import ProcessSlots, SharedSlots
from app.store.time_bound import StatementTimeout, bounded

__all__ = ["CatalogBusy", "CatalogGuard", "StatementTimeout"]


class CatalogBusy(Exception):
    """Every search slot of this process is taken: the search is refused, not queued."""


class CatalogGuard:
    """The search slots (a process's, or a server's) and the time bound of each catalog call."""

    def __init__(self, slots: int, bound_ms: int, shared_in: Path | None = None) -> None:
        """`slots`: searches at once (0: no limit), in the processes sharing the folder `shared_in`
        (serve.py's), else in this process; `bound_ms`: the longest a statement of a catalog call
        may run (0: no bound)."""
        self.slots, self.bound_ms = slots, bound_ms
        self._slots: ProcessSlots | SharedSlots | None = None
        if slots > 0:
            self._slots = SharedSlots(shared_in, slots) if shared_in is not None else ProcessSlots(slots)
        self._lock = threading.Lock()
        self._searching = 0

    @property
    def searching(self) -> int:
        """Searches of this process holding a slot now."""
        return self._searching

    @contextmanager
    def call(self, search: bool) -> Iterator[None]:
        """One catalog call, its statements bounded (or StatementTimeout); a search first takes a
        slot (or CatalogBusy at once), given back however the call ends."""
        if not search:
            with bounded(self.bound_ms):
                yield
            return
        slot = self._slots.try_take() if self._slots is not None else 0
        if slot is None:
            raise CatalogBusy
        with self._lock:
            self._searching += 1
        try:
            with bounded(self.bound_ms):
                yield
        finally:
            with self._lock:
                self._searching -= 1
            if self._slots is not None:
                self._slots.give_back(slot)
