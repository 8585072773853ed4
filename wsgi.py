"""WSGI entry point: granian serves `wsgi:app` (serve.py), and `flask` finds the app here (FLASK_APP=wsgi)."""

import gc
import logging

from app import create_app
from app.core.config import ConfigError, refusal

try:
    app = create_app()
except ConfigError as exc:  # `flask ...` and the server: one clear line, not a traceback
    raise refusal(exc) from None

# Everything loaded so far (the app, its routes, SQLAlchemy's mappers, Authlib, the libraries:
# a large heap) lives as long as the process. gc.freeze() moves it to a permanent generation that
# the cyclic garbage collector no longer walks; otherwise a full collection walks it all, a pause
# inside whichever request triggered it (the /v1 benchmark's p99 spikes; docs/performance.md).
gc.freeze()

# What Python's logging works out for every record and our JSON lines never print: the caller's
# file and line (a walk up the stack), the thread's and the process's names. Switched off for the
# served app as the logging HOWTO's "Optimization" section says to: a cost on every request that a
# userinfo answered at the front would notice.
logging._srcfile = None  # type: ignore[attr-defined]  # the HOWTO's documented switch
logging.logThreads = False
logging.logProcesses = False
logging.logMultiprocessing = False
