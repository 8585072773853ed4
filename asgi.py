"""The tool server's entry point for granian (ASGI, factory mode): `asgi:create_tool_server`.

Like wsgi.py for the provider, it stands outside the layers: it builds the Flask app (settings,
database, Redis, logs) the tool server reads the catalog through, then the tool server's ASGI app
around it (app/web/toolserver/asgi.py)."""

from __future__ import annotations

import gc
import logging

from app.web.toolserver.asgi import tool_server_app
from app.web.toolserver.metadata import ResourceMetadata


def create_tool_server() -> ResourceMetadata:
    """granian's factory, once per worker process."""
    from app import create_app
    from app.core.config import ConfigError, refusal

    try:
        flask_app = create_app()
    except ConfigError as exc:
        raise refusal(exc) from None
    application = tool_server_app(flask_app)
    # As wsgi.py does for the provider: the objects loaded so far live as long as the process, so
    # the cyclic collector stops walking them; logging skips what our JSON lines never print.
    gc.freeze()
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    return application
