"""The widget snippet on the console's key pages, over HTTP against the live server: a publishable
key's value page shows it with the key (shown once), its key page with the key's visible start; a
secret key, and a revoked one, show none. (tests/e2e/test_widget_e2e.py pastes it into a page.)"""

from __future__ import annotations

import re
from html import unescape

from app.core.extensions import db
from app.models import ApiKey
from app.services.apikeys import revoke_key
from tests.factories import make_member
from tests.integration.console_support import signed_in
from tests.integration.test_console_api_keys import create, value_on_page


def snippet_on_page(html: str) -> str | None:
    match = re.search(r'<code id="widget-snippet">(.*?)</code>', html, re.S)
    return unescape(match.group(1)) if match else None


def test_a_publishable_key_comes_with_its_snippet(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    created = create(browser, name="Artist pages", kind="publishable", domains="shop.example.com")
    assert created.status_code == 200
    value = value_on_page(created.text)
    assert value and value.startswith("mpk_")
    assert snippet_on_page(created.text) == (
        f'<div data-credits-profile="PROFILE_ID" data-credits-key="{value}"></div>\n'
        f'<script src="{live_server.url}/embed/v1/widget.js" async></script>'
    )
    assert 'data-copy="widget-snippet"' in created.text

    db.session.remove()
    key = db.session.scalar(db.select(ApiKey))
    page = browser.get(f"/console/api-keys/{key.id}").text
    shown = snippet_on_page(page)
    assert shown is not None and value not in page  # the value is shown once, never again
    assert f'data-credits-key="{key.prefix}…"' in shown and "Put the whole key" in page

    revoke_key(key)
    db.session.commit()
    assert snippet_on_page(browser.get(f"/console/api-keys/{key.id}").text) is None


def test_a_secret_key_has_no_snippet(live_server):
    dev = make_member(role="developer")
    browser = signed_in(live_server.url, dev.email)
    created = create(browser, name="Server", kind="secret")
    assert value_on_page(created.text).startswith("msk_")
    assert snippet_on_page(created.text) is None and "widget.js" not in created.text
    db.session.remove()
    key = db.session.scalar(db.select(ApiKey))
    assert snippet_on_page(browser.get(f"/console/api-keys/{key.id}").text) is None
