"""A few slots for the calls that may hold a thread for long (catalog searches, issue 47), taken
without waiting: `try_take()` gives a slot's number or None at once, `give_back(n)` frees it.

- `ProcessSlots`: the slots of one process (a semaphore).
- `SharedSlots`: the slots of every process that opens the same folder - serve.py's workers and
  its tool server, which it hands a fresh folder (`CATALOG_SLOTS_DIR`): slot n is an exclusive
  `flock` on the file `slot-n` there, taken and dropped with one system call each, and dropped by
  the kernel if the process dies holding it. A thread lock per slot keeps two threads of one
  process apart (a process's own flock would not)."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path


class ProcessSlots:
    def __init__(self, size: int) -> None:
        self._free = threading.BoundedSemaphore(size)

    def try_take(self) -> int | None:
        return 0 if self._free.acquire(blocking=False) else None

    def give_back(self, slot: int) -> None:
        self._free.release()


class SharedSlots:
    def __init__(self, folder: Path, size: int) -> None:
        self.folder, self.size = folder, size
        self._threads = [threading.Lock() for _ in range(size)]
        self._files: list[int] = []
        self._pid = 0
        self._opening = threading.Lock()

    def _opened(self) -> list[int]:
        """The slot files, opened once in each process (a forked worker opens its own) - by one
        thread: two first searches at once in a fresh worker each opened them, and the second
        set replaced the first while a slot was held on it, so that slot was given back on a
        file that held nothing and stayed taken until the worker died (every search after it
        refused)."""
        if self._pid != os.getpid():
            with self._opening:
                if self._pid != os.getpid():
                    self.folder.mkdir(parents=True, exist_ok=True)
                    files = [
                        os.open(self.folder / f"slot-{n}", os.O_RDWR | os.O_CREAT, 0o600) for n in range(self.size)
                    ]
                    self._files, self._pid = files, os.getpid()
        return self._files

    def try_take(self) -> int | None:
        files = self._opened()
        for n in range(self.size):
            if not self._threads[n].acquire(blocking=False):
                continue
            try:
                fcntl.flock(files[n], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._threads[n].release()
                continue
            return n
        return None

    def give_back(self, slot: int) -> None:
        fcntl.flock(self._files[slot], fcntl.LOCK_UN)
        self._threads[slot].release()
