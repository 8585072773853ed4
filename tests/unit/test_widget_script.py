"""The hosted widget script's HTTP: its two addresses and their caching, strong ETags and 304s per
encoding, gzip, the headers a cross-origin `<script>` needs, that it spends no request budget and
is never metered, and the copy-paste snippet."""

from __future__ import annotations

import gzip
import hashlib
import re

import pytest

from app.core.extensions import db
from app.models import ApiUsage
from app.web.api.widget_script import SCRIPT, build, snippet

pytestmark = pytest.mark.usefixtures("fresh_budgets")  # tests/conftest.py

GZIP = {"Accept-Encoding": "gzip, deflate, br"}
TARGET_GZIPPED = 8 * 1024


def test_the_stable_address_is_fresh_for_minutes_then_revalidated(client):
    response = client.get("/embed/v1/widget.js")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert response.headers["Cache-Control"] == "public, max-age=300"
    assert response.get_data() == SCRIPT.read_bytes()
    digest = hashlib.sha256(SCRIPT.read_bytes()).hexdigest()[:16]
    assert response.headers["ETag"] == f'"{digest}"'
    assert response.headers["Content-Location"] == f"/embed/v1/widget.{digest}.js"
    assert response.headers["Vary"] == "Accept-Encoding"
    assert response.headers["X-Content-Type-Options"] == "nosniff"  # so the type must be right
    assert "Content-Security-Policy" not in response.headers  # not a page
    revalidated = client.get("/embed/v1/widget.js", headers={"If-None-Match": response.headers["ETag"]})
    assert revalidated.status_code == 304 and revalidated.get_data() == b""
    assert revalidated.headers["ETag"] == response.headers["ETag"]
    assert revalidated.headers["Cache-Control"] == "public, max-age=300"
    changed = client.get("/embed/v1/widget.js", headers={"If-None-Match": '"0123456789abcdef"'})
    assert changed.status_code == 200 and changed.get_data() == SCRIPT.read_bytes()


def test_the_pinned_address_is_immutable_and_only_the_current_build(client):
    pinned = client.get(f"/embed/v1/widget.{build().digest}.js")
    assert pinned.status_code == 200 and pinned.get_data() == SCRIPT.read_bytes()
    assert pinned.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Content-Location" not in pinned.headers
    for old in ("0123456789abcdef", build().digest[:-1], "..", "x" * 200):
        response = client.get(f"/embed/v1/widget.{old}.js")
        assert response.status_code == 404, old
        assert response.get_json() == {"result": "error", "code": 404, "message": "Not found"}
        assert response.headers["Cache-Control"] == "no-store"


def test_gzip_is_its_own_representation_with_its_own_etag(client):
    plain = client.get("/embed/v1/widget.js")
    packed = client.get("/embed/v1/widget.js", headers=GZIP)
    assert packed.headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain.headers
    assert gzip.decompress(packed.get_data()) == plain.get_data()
    assert len(packed.get_data()) <= TARGET_GZIPPED, len(packed.get_data())
    assert packed.headers["ETag"] != plain.headers["ETag"]
    # Holding one encoding is no 304 for the other.
    assert (
        client.get("/embed/v1/widget.js", headers={"If-None-Match": plain.headers["ETag"], **GZIP}).status_code == 200
    )
    again = client.get("/embed/v1/widget.js", headers={"If-None-Match": packed.headers["ETag"], **GZIP})
    assert again.status_code == 304
    refused = client.get("/embed/v1/widget.js", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "Content-Encoding" not in refused.headers


def test_any_page_may_load_it_cross_origin(client):
    """A plain `<script src>` needs nothing; `<script crossorigin>` (Subresource Integrity) needs CORS,
    and a host page with `Cross-Origin-Embedder-Policy: require-corp` needs CORP."""
    for headers in ({}, {"Origin": "https://widgets.example"}):
        response = client.get("/embed/v1/widget.js", headers=headers)
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        assert response.headers["Cross-Origin-Resource-Policy"] == "cross-origin"
        assert "Access-Control-Allow-Credentials" not in response.headers
        assert response.headers["x-service-version"]


def test_the_script_spends_no_budget_and_is_never_metered(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "API_RATE_LIMIT_PER_MINUTE", 1)
    for _ in range(3):
        response = client.get("/embed/v1/widget.js")
        assert response.status_code == 200
        assert "RateLimit-Remaining" not in response.headers
    assert client.get("/embed/v1/nope").status_code == 404  # an API path still draws on the address
    assert client.get("/embed/v1/nope").status_code == 429
    assert db.session.scalar(db.select(db.func.count()).select_from(ApiUsage)) == 0


def test_the_script_asks_nothing_a_strict_csp_forbids():
    """No eval, no Function(), no inline handler or style attribute, no innerHTML; the styles go in
    a constructable sheet. (The real-browser tests run it under such a CSP.)"""
    source = re.sub(r"/\*.*?\*/", "", SCRIPT.read_text(), flags=re.DOTALL)
    source = re.sub(r"\s//\s.*", "", source)  # the code, not its comments
    for forbidden in (
        r"\beval\(",
        r"new Function",
        r"\bFunction\(",
        r"innerHTML",
        r"outerHTML",
        r"insertAdjacentHTML",
        r"setAttribute\(\s*[\"']style",
        r"\.style\.",
        r"setAttribute\(\s*[\"']on",
        r"document\.write",
    ):
        assert not re.search(forbidden, source), forbidden
    assert "adoptedStyleSheets" in source and "replaceSync" in source


def test_the_snippet_names_the_key_and_the_stable_address(app):
    text = snippet("mpk_" + "A" * 43, "3f2c-profile")
    assert text == (
        f'<div data-credits-profile="3f2c-profile" data-credits-key="mpk_{"A" * 43}"></div>\n'
        f'<script src="{app.config["ISSUER_URL"]}/embed/v1/widget.js" async></script>'
    )
