"""The tool server's entry point for granian (ASGI, factory mode): `asgi:create_tool_server`.

Like wsgi.py for the provider, it stands outside the layers: it builds the Flask app (settings,
database, Redis, logs) the tool server reads the catalog through, then the tool server's ASGI app
around it (app/web/toolserver/asgi.py)."""

from __future__ import annotations

from app.core.serving import settle_for_serving
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
    settle_for_serving()  # as wsgi.py does for the provider
    return application
