"""The hosted widget script (static/widget/widget.js), served under the widget API's version.

Two addresses for the same bytes (docs/widgets.md):
- `/embed/v1/widget.js`, the one the snippet uses: fresh for 5 minutes, then revalidated with its
  strong ETag (a 304 without a body), so a fix reaches every page within minutes and no page
  pins a build this server no longer has. Its `Content-Location` names the address below.
- `/embed/v1/widget.<digest>.js`, the current build by its content digest: immutable, cached a
  year, for pages that pin a build with Subresource Integrity. Only the current build is served:
  an older digest is 404, so such a page updates address and hash with each release.

Both carry `Access-Control-Allow-Origin: *` (a `<script crossorigin>`, which SRI needs) and
`Cross-Origin-Resource-Policy: cross-origin` (for host pages that require CORP), and come
gzip-encoded to a browser that accepts it: the file is read and compressed once per process. The
script is a public static file: it spends no request budget and is never metered (app/web/api/__init__.py)."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from html import escape

from flask import Blueprint, Response, abort, current_app, request

from app.core.config import PROJECT_ROOT
from app.protocol.metadata import not_modified

SCRIPT = PROJECT_ROOT / "static" / "widget" / "widget.js"
PREFIX = "/embed/v1"
STABLE_CACHE = "public, max-age=300"
PINNED_CACHE = "public, max-age=31536000, immutable"
MIMETYPE = "text/javascript"  # RFC 9239

bp = Blueprint("widget_script", __name__, url_prefix=PREFIX)


@dataclass(frozen=True)
class Build:
    """The script as served: its bytes, gzipped, and its digest (the pinned address and the ETags)."""

    body: bytes
    gzipped: bytes
    digest: str

    @property
    def pinned_path(self) -> str:
        return f"{PREFIX}/widget.{self.digest}.js"


@cache
def build() -> Build:
    body = SCRIPT.read_bytes()
    return Build(body, gzip.compress(body, compresslevel=9, mtime=0), hashlib.sha256(body).hexdigest()[:16])


def script_url() -> str:
    """The stable public address of the script (what the snippet names)."""
    return f"{current_app.config['ISSUER_URL']}{PREFIX}/widget.js"


def snippet(key_value: str, profile_id: str = "PROFILE_ID") -> str:
    """The copy-paste HTML for a page: one card element and the script (docs/widgets.md)."""
    return (
        f'<div data-credits-profile="{escape(profile_id)}" data-credits-key="{escape(key_value)}"></div>\n'
        f'<script src="{escape(script_url())}" async></script>'
    )


def _serve(cache_control: str, pinned: bool) -> Response:
    current = build()
    gzipped = request.accept_encodings["gzip"] > 0
    # A strong ETag names one representation: the gzipped bytes have their own (RFC 9110 8.8.3).
    etag = f'"{current.digest}{"-gzip" if gzipped else ""}"'
    headers = {
        "Cache-Control": cache_control,
        "ETag": etag,
        "Vary": "Accept-Encoding",
        "Access-Control-Allow-Origin": "*",
        "Cross-Origin-Resource-Policy": "cross-origin",
    }
    if not pinned:
        headers["Content-Location"] = current.pinned_path
    if not_modified(etag, request.headers.get("If-None-Match")):
        return Response(status=304, mimetype=MIMETYPE, headers=headers)
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return Response(current.gzipped if gzipped else current.body, mimetype=MIMETYPE, headers=headers)


@bp.get("/widget.js")
def stable() -> Response:
    return _serve(STABLE_CACHE, pinned=False)


@bp.get("/widget.<digest>.js")
def pinned(digest: str) -> Response:
    if digest != build().digest:
        abort(404)
    return _serve(PINNED_CACHE, pinned=True)


def is_script_request() -> bool:
    """Whether the request reached one of the script's routes (no budget, no meter, its own caching)."""
    return request.blueprint == bp.name
