"""What a serving process does once its app is loaded: wsgi.py (the provider), asgi.py (the tool
server), and the benchmarks that measure what they serve (bench/catalog.py, bench/layers.py)."""

from __future__ import annotations

import gc
import logging


def settle_for_serving() -> None:
    """Everything loaded so far (the app, its routes, SQLAlchemy's mappers, Authlib, the libraries:
    a large heap) lives as long as the process. gc.freeze() moves it to a permanent generation that
    the cyclic garbage collector no longer walks; otherwise a full collection walks it all, a pause
    inside whichever request triggered it (the /v1 benchmark's p99 spikes; docs/performance.md).

    And what Python's logging works out for every record and our JSON lines never print - the
    caller's file and line (a walk up the stack), the thread's and the process's names - is switched
    off, as the logging HOWTO's "Optimization" section says to: a cost on every request that a
    userinfo answered at the front would notice."""
    gc.freeze()
    logging._srcfile = None  # the HOWTO's documented switch
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
