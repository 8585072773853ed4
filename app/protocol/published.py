"""The published documents - discovery (and its RFC 8414 twin) and the key set - answered at the front (app/protocol/front.py).

Every relying party and resource server fetches these two documents, and nothing about them
depends on who asks: they are the same bytes (prepared once, with an ETag) until the
configuration or the keys change. A plain `GET`/`HEAD` of either path is answered here with the
headers the Flask route gives; anything unusual goes on to Flask, whose routes
(app/web/protocol_views.py) answer exactly the same: a query string, an `Authorization` header, another
method, or a key set whose cached snapshot is due for a refresh from the database (the key store
reloads it inside Flask's app context).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

from app.core.capabilities import AS_METADATA_PATH, DISCOVERY_PATH, JWKS_PATH
from app.protocol.front import Answer, Answerer
from app.protocol.metadata import not_modified, published_headers


def _plain(environ: dict[str, Any]) -> bool:
    """A GET or HEAD with nothing that could change its answer or call for Flask's."""
    return (
        environ.get("REQUEST_METHOD") in ("GET", "HEAD")
        and not environ.get("QUERY_STRING")
        and "HTTP_AUTHORIZATION" not in environ
    )


def _document(endpoint: str, current: Callable[[], tuple[bytes, str] | None], max_age: int) -> Answerer:
    """The answerer of one document; `current` gives its (body, etag), or None when only Flask
    can tell."""

    def answer(environ: dict[str, Any]) -> Answer | None:
        document = current() if _plain(environ) else None
        if document is None:
            return None
        body, etag = document
        headers = published_headers(etag, max_age)
        if not_modified(etag, environ.get("HTTP_IF_NONE_MATCH")):
            return Answer(endpoint, 304, headers, b"")
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers]
        return Answer(endpoint, 200, headers, b"" if environ["REQUEST_METHOD"] == "HEAD" else body)

    return answer


def answerers(app: Flask) -> dict[str, Answerer]:
    discovery, keystore = app.extensions["discovery"], app.extensions["keystore"]
    as_metadata = app.extensions["as_metadata"]
    max_age = int(app.config["JWKS_MAX_AGE"])

    def keys() -> tuple[bytes, str] | None:
        snap = keystore.fresh_snapshot()
        return (snap.jwks_body, snap.jwks_etag) if snap is not None else None

    return {
        DISCOVERY_PATH: _document("oauth.discovery", lambda: (discovery.body, discovery.etag), max_age),
        JWKS_PATH: _document("oauth.jwks", keys, max_age),
        AS_METADATA_PATH: _document("oauth.as_metadata", lambda: (as_metadata.body, as_metadata.etag), max_age),
    }
