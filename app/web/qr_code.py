"""QR codes drawn on the server, as SVG inside the page: no script and no image request, so the
strict Content-Security-Policy stays as it is (segno writes only SVG presentation attributes,
never a `style`). Dark modules on a white square with the standard four-module quiet zone, whatever
the page's colour scheme: scanners need the contrast."""

from __future__ import annotations

import segno
from markupsafe import Markup

SCALE = 5  # user units per module; the page sizes it (a viewBox, no width: static/style.css)


def qr_svg(data: str, title: str) -> Markup:
    """`data` as an inline <svg class="qr"> with `title` as its accessible name (role img)."""
    code = segno.make(data, error="m")
    svg = code.svg_inline(scale=SCALE, dark="#000", light="#fff", title=title, svgclass="qr", omitsize=True)
    # segno escapes the title; the rest is numbers and fixed attributes.
    return Markup(svg.replace("<svg ", '<svg role="img" ', 1))  # noqa: S704 - segno's own SVG, title escaped by it
