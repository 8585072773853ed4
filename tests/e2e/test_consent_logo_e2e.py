"""The consent page's app logo and buttons (issue 21, item 3), in a real browser: a logo that
fails, or that the CSP blocks, shows the app's initial and no broken image; a working logo shows;
Allow and Deny are above the fold on a 390×844 phone."""

from __future__ import annotations

from app.core.extensions import db
from app.models import Client
from tests.e2e.helpers import authorize_url
from tests.e2e.test_account_console_e2e import sign_in_on_login_page
from tests.factories import make_client, make_member
from tests.flows import RelyingParty

SCOPE = "openid profile email credits:read analytics:read offline_access"


def app_with_logo(live_server, callback, logo_url: str | None, name: str = "Liner Notes") -> RelyingParty:
    client, secret = make_client(name=name, redirect_uris=[callback.url])
    # Set in the database as an app registered before the https rule (or on this very origin) has it.
    db.session.get(Client, client.id).logo_url = logo_url
    db.session.commit()
    return RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)


def logo_state(page) -> dict:
    return page.evaluate(
        """() => { const box = document.querySelector('.app-head .app-logo');
          const img = box.querySelector('img'); const initial = box.querySelector('.app-initial');
          return {img: img ? {complete: img.complete, width: img.naturalWidth} : null,
                  initial: initial.innerText, initialVisible: initial.getBoundingClientRect().width > 0}; }"""
    )


def test_a_logo_that_fails_or_is_blocked_shows_the_initial(live_server, callback, page, shots):
    member = make_member()
    cases = (
        ("unreachable", "https://127.0.0.1:1/logo.png"),  # the fetch fails
        ("blocked-by-csp", "http://127.0.0.2:9/logo.png"),
    )  # plain http: img-src refuses it
    for label, logo in cases:
        rp = app_with_logo(live_server, callback, logo)
        page.goto(authorize_url(live_server.url, rp, "openid")[0])
        if "/login" in page.url:
            sign_in_on_login_page(page, member.email)
        page.wait_for_url("**/consent?**")
        page.wait_for_load_state("networkidle")
        state = logo_state(page)
        assert state["img"] is None, (label, state)  # the failed image is gone (static/app_logo.js)
        assert state["initial"] == "L" and state["initialVisible"], (label, state)
        shots.take(f"consent-logo-{label}")
    # The only complaints are about those two logos, never a script or style the CSP refused.
    assert all("127.0.0.1:1/logo.png" in m or "127.0.0.2:9/logo.png" in m for m in page.problems.messages), (
        page.problems.messages
    )


def test_a_working_logo_is_shown_and_the_page_works_without_script(live_server, callback, chromium, shots):
    member = make_member()
    rp = app_with_logo(live_server, callback, live_server("/static/favicon.svg"))
    broken = app_with_logo(live_server, callback, "https://127.0.0.1:1/logo.png", name="Broken Logo App")
    ctx = chromium.new_context(viewport={"width": 1100, "height": 900}, java_script_enabled=False)
    try:
        page = ctx.new_page()
        shots.page = page
        page.goto(authorize_url(live_server.url, rp, "openid")[0])
        sign_in_on_login_page(page, member.email)
        page.wait_for_url("**/consent?**")
        page.wait_for_load_state("networkidle")
        state = logo_state(page)
        assert state["img"] == {"complete": True, "width": state["img"]["width"]} and state["img"]["width"] > 0
        shots.take("consent-working-logo")
        # Without script the failed image stays in the page and draws the initial itself (style.css ::after).
        page.goto(authorize_url(live_server.url, broken, "openid")[0])
        page.wait_for_url("**/consent?**")
        page.wait_for_load_state("networkidle")
        state = logo_state(page)
        assert state["img"] == {"complete": True, "width": 0} and state["initialVisible"], state
        shot = shots.take("consent-broken-logo-no-script")
        assert shot.exists()
    finally:
        ctx.close()


def test_allow_and_deny_are_above_the_fold_on_a_phone(live_server, callback, chromium, shots):
    member = make_member(tier="pro", name="Parker Pro")
    rp = app_with_logo(live_server, callback, None, name="A Rather Long Application Name For Small Screens")
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = phone.new_page()
        shots.page = page
        page.goto(authorize_url(live_server.url, rp, SCOPE)[0])
        sign_in_on_login_page(page, member.email)
        page.wait_for_url("**/consent?**")
        assert page.evaluate("window.scrollY") == 0
        for name in ("Allow", "Deny"):
            box = page.get_by_role("button", name=name).bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 844, (name, box)
        shots.take("phone-consent-above-the-fold", full_page=False)
    finally:
        phone.close()
