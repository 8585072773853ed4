"""The console and the audit log on a 390 px phone (issue 50, item 16), in a real browser: no page
scrolls sideways (wide tables scroll inside their own box), and the navigation is compact - one
row that scrolls on its own, not a wall of links above the page."""

from __future__ import annotations

import pytest

from tests.e2e.test_console_pages_e2e import open_console
from tests.factories import make_client, make_member
from tests.key_support import make_key

PHONE = {"width": 390, "height": 844}
PAGES = [
    "/console",
    "/console/apps/new",
    "/console/apps/{client_id}",
    "/console/api-keys",
    "/console/api-keys/{key_id}",
    "/console/api-keys/{key_id}/revoke",
    "/console/fees",
    "/console/audit",
    "/console/activity",
    "/console/keys",
    "/console/users",
    "/console/users/{member_id}",
    "/console/users/{member_id}/suspend",
    "/api/reference",
    "/docs/integrating",
]


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    context.set_default_timeout(60_000)
    page = context.new_page()
    yield page
    context.close()


def overflow(page) -> int:
    """How far the page reaches past the screen's right edge, in CSS pixels (0: no sideways scroll)."""
    return page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


def widest(page) -> str:
    """The innermost elements wider than the screen (to say what to fix)."""
    return page.evaluate(
        """() => { const screen = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')].filter(e =>
          !e.closest('.console-nav') && e.getBoundingClientRect().right > screen + 1);
        const innermost = wide.filter(e => !wide.some(o => o !== e && e.contains(o)));
        return innermost.slice(0, 3).map(e => e.tagName + '.' + e.className + ' ' +
          (e.textContent || '').trim().slice(0, 30)).join(' | '); }"""
    )


def test_console_pages_fit_a_phone(live_server, phone, request):
    from tests.e2e.conftest import ARTIFACTS, Shots

    shots = Shots(phone, ARTIFACTS / request.node.name)
    admin = make_member(role="admin", email="ada.admin@example.com")
    member = make_member(role="developer", email="a.rather.long.address.for.a.phone@example.com")
    client, _ = make_client(
        name="Liner Notes with a long name",
        owner_id=admin.id,
        redirect_uris=["https://liner-notes.example.com/oauth/callback/with/a/long/path"],
    )
    key, _ = make_key(owner=admin, name="Production server")
    open_console(phone, live_server, admin.email)
    nav = phone.get_by_role("navigation", name="Console")
    nav_height = nav.bounding_box()["height"]
    wide = {}
    for path in PAGES:
        url = path.format(client_id=client.client_id, key_id=key.id, member_id=member.id)
        phone.goto(live_server(url))
        phone.wait_for_load_state("networkidle")
        shots.take(url.strip("/").replace("/", "-")[:60])
        current = phone.locator('.console-nav [aria-current="page"]')
        if url.startswith("/console") and current.count():
            box = current.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (
                f"{url}: the current section is off screen"
            )
        if (extra := overflow(phone)) > 0:
            wide[url] = (extra, widest(phone))
    assert (wide, nav_height <= 64) == ({}, True), (
        f"pages wider than a 390 px phone (px too wide): {wide}; the navigation is {nav_height} px high"
    )
