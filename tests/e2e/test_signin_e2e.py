"""Sign-in in a real browser: login -> consent -> the app's callback, deny, prompt=login, the
error pages, and the pages' own promises (labelled inputs, visible focus, keyboard-only use,
no CSP violation, no sideways scrolling on a phone). Every page passed is screenshotted."""

from __future__ import annotations

import os
import shutil
from urllib.parse import urlencode

from app.core.extensions import db
from app.models import Consent
from tests.e2e.conftest import ROOT
from tests.e2e.helpers import (
    LOGIN_FIELDS,
    authorize_url,
    focus_is_visible,
    login_with_keyboard,
    reenter_password_with_keyboard,
    tab_to,
    verify_id_token,
    wait_for_next_second,
)
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import AUTHORIZE, RelyingParty

SCOPE = "openid profile email credits:read analytics:read offline_access"
DOCS_SCREENSHOT = ROOT / "docs" / "img" / "consent.png"


def app_for(live_server, callback, **kw):
    kw.setdefault("name", "Liner Notes")
    kw.setdefault("homepage_url", "https://liner-notes.example")
    client, secret = make_client(redirect_uris=[callback.url], **kw)
    return client, RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def test_login_consent_callback_with_the_keyboard_alone(live_server, callback, page, shots):
    member = make_member(tier="basic", name="Billie Basic", email="billie@example.com")
    client, rp = app_for(live_server, callback)
    url, params = authorize_url(live_server.url, rp, SCOPE)

    response = page.goto(url)
    assert page.url.startswith(live_server("/login?")), page.url
    assert response.headers["content-security-policy"].startswith("default-src 'self'")
    assert response.headers["x-frame-options"] == "DENY"
    assert page.title() == "Sign in · Credits ID"
    assert "Liner Notes" in page.locator("main").inner_text()
    # Every input is labelled; the form keeps the names the other tests and the bench post.
    assert page.get_by_label("Email").get_attribute("name") == "email"
    assert page.get_by_label("Password").get_attribute("type") == "password"
    for name in LOGIN_FIELDS:
        assert page.locator(f'form [name="{name}"]').count() == 1, name
    shots.take("login")

    login_with_keyboard(page, member.email)
    assert page.url.startswith(live_server("/consent?")), page.url
    main = page.locator("main").inner_text()
    assert "Liner Notes wants to access your Credits ID account" in main
    assert "Read your credits" in main and "Billie Basic" in main
    # analytics is shown as not included on basic, and offered nowhere as a checkbox.
    assert "Not included in your basic membership" in main
    assert page.locator('input[name="scope"][value="analytics:read"]').count() == 0
    assert page.get_by_label("Read your credits").is_checked()
    # The consent form is the first POST form, and the buttons keep their names and values.
    first_form = page.locator('form[method="post"]').first
    assert first_form.locator('button[name="decision"][value="allow"]').count() == 1
    assert first_form.locator('button[name="decision"][value="deny"]').count() == 1
    shots.take("consent")
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shots.folder / "02-consent.png", DOCS_SCREENSHOT)

    # Untick "See your email address" with the space bar, then reach Allow with Tab.
    tab_to(page, {"name": "scope", "value": "email"})
    assert focus_is_visible(page), "keyboard focus must be visible on the checkbox"
    page.keyboard.press("Space")
    assert not page.get_by_label("See your email address").is_checked()
    tab_to(page, {"name": "decision", "value": "allow"})
    assert focus_is_visible(page), "keyboard focus must be visible on the Allow button"
    with page.expect_navigation():
        page.keyboard.press("Enter")

    assert page.url.startswith(callback.url)
    shots.take("callback")
    back = callback.last()
    assert back["state"] == params["state"] and back["iss"] == live_server.url and "code" in back
    tokens = rp.exchange(back["code"])
    assert tokens.status_code == 200, tokens.text
    body = tokens.json()
    assert body["scope"].split() == ["openid", "profile", "credits:read", "offline_access"]
    claims = verify_id_token(live_server.url, body["id_token"], client.client_id, params["nonce"])
    assert claims["sub"] == member.sub and claims["name"] == "Billie Basic"
    assert "email" not in claims  # unticked on the consent page
    db.session.remove()
    consent = db.session.scalar(db.select(Consent).where(Consent.user_id == member.id))
    assert consent is not None and "email" not in consent.scope.split()
    no_page_problems(page)


def test_deny_sends_access_denied_back_and_shares_nothing(live_server, callback, page, shots):
    member = make_member()
    _, rp = app_for(live_server, callback)
    url, params = authorize_url(live_server.url, rp, "openid profile credits:read")

    page.goto(url)
    shots.take("login")
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server("/consent") + "*")
    shots.take("consent")
    page.get_by_role("button", name="Deny").click()
    page.wait_for_url(callback.url + "*")
    shots.take("callback-denied")

    back = callback.last()
    assert back["error"] == "access_denied"
    assert back["state"] == params["state"] and back["iss"] == live_server.url
    assert "code" not in back
    db.session.remove()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is None
    no_page_problems(page)


def test_prompt_login_asks_again_and_moves_auth_time(live_server, callback, page, shots):
    member = make_member()
    client, rp = app_for(live_server, callback)

    url, params = authorize_url(live_server.url, rp, "openid profile")
    page.goto(url)
    shots.take("login")
    login_with_keyboard(page, member.email)
    shots.take("consent")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    shots.take("callback-first")
    first = verify_id_token(
        live_server.url, rp.exchange(callback.last()["code"]).json()["id_token"], client.client_id, params["nonce"]
    )

    # Signed in and consented: without prompt the browser goes straight back to the app.
    url, params = authorize_url(live_server.url, rp, "openid profile")
    page.goto(url)
    page.wait_for_url(callback.url + "*")
    shots.take("callback-silent")
    silent = verify_id_token(
        live_server.url, rp.exchange(callback.last()["code"]).json()["id_token"], client.client_id, params["nonce"]
    )
    assert silent["auth_time"] == first["auth_time"]

    # prompt=login: the login page again, even though the member is signed in.
    wait_for_next_second(first["auth_time"])
    url, params = authorize_url(live_server.url, rp, "openid profile", prompt="login")
    page.goto(url)
    assert page.url.startswith(live_server("/login?")), page.url
    shots.take("login-again")
    assert page.get_by_role("button", name="Not you? Use another account").is_visible()
    reenter_password_with_keyboard(page, member.email)
    page.wait_for_url(callback.url + "*")  # consent is remembered: no consent page this time
    shots.take("callback-after-prompt-login")
    again = verify_id_token(
        live_server.url, rp.exchange(callback.last()["code"]).json()["id_token"], client.client_id, params["nonce"]
    )
    assert again["sub"] == first["sub"]
    assert again["auth_time"] > first["auth_time"]
    no_page_problems(page)


def test_wrong_password_is_said_plainly_and_marked_on_the_fields(live_server, callback, page, shots):
    member = make_member()
    _, rp = app_for(live_server, callback)
    page.goto(authorize_url(live_server.url, rp, "openid")[0])
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    assert alert.inner_text() == "Incorrect email or password."
    assert page.get_by_label("Password").get_attribute("aria-invalid") == "true"
    assert page.get_by_label("Email").input_value() == member.email
    shots.take("login-wrong-password")
    assert callback.received == []
    no_page_problems(page)


def test_error_pages_say_what_happened_and_what_to_do(live_server, callback, page, shots):
    _client, rp = app_for(live_server, callback)

    response = page.goto(live_server("/api/auth/oauth2/authorize?response_type=code&client_id=no-such-app"))
    assert response.status == 400
    main = page.locator("main").inner_text()
    assert "Unknown application" in main and "not registered" in main
    assert page.locator("#error-client-id").inner_text() == "no-such-app"  # the refused id, as text
    assert "What you can do" in main and "tell its team" in main
    developer = page.locator("#developer-hint")
    developer.get_by_text("For the app's developer").click()
    assert "No app has this client_id" in developer.inner_text() and "console" in developer.inner_text()
    shots.take("unknown-app")

    bad_redirect = dict(rp.auth_params("openid"), redirect_uri="https://evil.example/cb")
    page.goto(f"{live_server.url}{AUTHORIZE}?{urlencode(bad_redirect)}")
    main = page.locator("main").inner_text()
    assert "Unregistered redirect address" in main and "Nothing was shared" in main
    assert page.url.startswith(live_server.url + AUTHORIZE)  # stayed on the provider: no redirect
    shots.take("unregistered-redirect")

    response = page.goto(live_server("/no/such/page"))
    assert response.status == 404
    main = page.locator("main").inner_text()
    assert "Page not found" in main and "Check the address" in main
    for internal in ("Traceback", "werkzeug", "sqlalchemy", 'File "'):
        assert internal not in page.content()
    shots.take("not-found")
    assert callback.received == []
    no_page_problems(page)


def test_pages_fit_a_phone_screen(live_server, callback, chromium, shots):
    member = make_member(tier="pro", name="Parker Pro")
    _, rp = app_for(live_server, callback, name="A Rather Long Application Name For Small Screens")
    phone = chromium.new_context(
        viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True, color_scheme="dark"
    )  # and the dark scheme
    try:
        mobile = phone.new_page()
        shots.page = mobile
        mobile.goto(authorize_url(live_server.url, rp, SCOPE)[0])
        assert fits_width(mobile)
        shots.take("phone-login")
        mobile.get_by_label("Email").fill(member.email)
        mobile.get_by_label("Password").fill(PASSWORD)
        mobile.get_by_role("button", name="Sign in").click()
        mobile.wait_for_url(live_server("/consent") + "*")
        assert fits_width(mobile)
        # pro: analytics is offered as a checkbox.
        assert mobile.get_by_label("Read your analytics").is_checked()
        shots.take("phone-consent")
        box = mobile.get_by_role("button", name="Allow").bounding_box()
        assert box["height"] >= 44 and box["width"] >= 200, box  # a thumb-sized target
    finally:
        phone.close()


def fits_width(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
