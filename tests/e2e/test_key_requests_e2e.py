"""In a real browser: a developer opens a key's console page and reads its recent requests - the
answered ones, a refused one with the parameter at fault, and, after the key was revoked, the
refusal that says so - on a desktop and on a 390 px phone (the table scrolls in its own box, the
page does not). UPDATE_DOCS_SCREENSHOTS=1 refreshes docs/img/console-key-requests.png."""

from __future__ import annotations

import requests

from app.core.extensions import db
from app.services.apikeys import revoke_key
from tests.api_support import make_catalog
from tests.conftest import heard_elsewhere
from tests.e2e.test_console_pages_e2e import open_console, to_docs
from tests.e2e.test_console_phone_e2e import PHONE, overflow, widest
from tests.factories import make_member
from tests.key_support import make_key


def test_a_keys_page_shows_its_requests_and_why_the_refused_ones_were_refused(live_server, chromium, page, shots):
    from playwright.sync_api import expect

    catalog = make_catalog(credits=3)
    dev = make_member(role="developer")
    key, value = make_key(owner=dev, name="Liner Notes backend")

    def call(path: str, **kw) -> requests.Response:
        return requests.get(live_server(path), headers={"x-api-key": value}, timeout=30, **kw)

    assert call("/v1/roles").status_code == 200
    assert call(f"/v1/profile/{catalog.mine}").status_code == 200
    assert call("/v1/search/autocomplete", params={"q": "ada"}).status_code == 200
    assert call(f"/v1/profile/{catalog.mine}/credits", params={"limit": 500}).status_code == 400
    revoke_key(key, actor=dev)
    db.session.commit()
    heard_elsewhere()  # the live server is another process
    refused = call("/v1/roles")
    assert refused.status_code == 401

    open_console(page, live_server, dev.email, f"/console/api-keys/{key.id}")
    section = page.locator("#recent-requests")
    expect(section.get_by_role("heading", name="Recent requests")).to_be_visible()
    rows = section.locator("tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text("GET /v1/roles")
    expect(rows.first).to_contain_text("401")
    expect(rows.first).to_contain_text("Unauthorized — the key is revoked")
    expect(rows.first).to_contain_text(refused.headers["X-Request-Id"])
    expect(rows.nth(1)).to_contain_text("Too big page, max page size is 50 (limit)")
    expect(rows.nth(2)).to_contain_text("GET /v1/search/autocomplete")
    expect(section).not_to_contain_text("q=ada")
    expect(rows.last).to_contain_text("GET /v1/roles")
    expect(section).to_contain_text("mistyped")  # how to tell a mistyped key from this one
    shots.take("key-page")
    shot = shots.folder / "recent-requests.png"
    section.screenshot(path=str(shot))
    to_docs(shot, "console-key-requests.png")
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"

    phone = chromium.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    try:
        phone.add_cookies(page.context.cookies())  # the same signed-in developer
        small = phone.new_page()
        small.goto(live_server(f"/console/api-keys/{key.id}"))
        expect(small.locator("#recent-requests tbody tr")).to_have_count(5)
        assert overflow(small) == 0, f"the key page scrolls sideways on a phone: {widest(small)}"
        small.screenshot(path=str(shots.folder / "key-page-phone.png"), full_page=True)
    finally:
        phone.close()
