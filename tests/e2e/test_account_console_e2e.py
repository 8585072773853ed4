"""The member's account page (revoke a connected app) and the console (register an app, then sign
in with it), in a real browser. Written against the behaviour issue 4 describes; each test skips,
saying why, on a build that has no /account or /console pages yet."""

from __future__ import annotations

import re

import pytest
import requests

from app.extensions import db
from app.models import Consent
from tests.e2e.helpers import authorize_url
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import USERINFO, RelyingParty


def require_pages(app, prefix: str) -> None:
    if not any(rule.rule.startswith(prefix) for rule in app.url_map.iter_rules()):
        pytest.skip(f"this build has no {prefix} pages yet (issue 4 adds them)")


def sign_in_on_login_page(page, email: str) -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def connect(page, live_server, callback, rp: RelyingParty, email: str, shots) -> dict:
    """Sign in to the app and allow it: returns the tokens the app got."""
    url, _ = authorize_url(live_server.url, rp, "openid profile credits:read offline_access")
    page.goto(url)
    sign_in_on_login_page(page, email)
    page.wait_for_url("**/consent?**")
    shots.take("consent")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    shots.take("callback")
    response = rp.exchange(callback.last()["code"])
    assert response.status_code == 200, response.text
    return response.json()


def test_account_page_revokes_a_connected_app(live_server, app, callback, page, shots):
    require_pages(app, "/account")
    member = make_member(name="Billie Basic")
    client, secret = make_client(name="Liner Notes", redirect_uris=[callback.url])
    rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
    tokens = connect(page, live_server, callback, rp, member.email, shots)

    page.goto(live_server("/account"))
    shots.take("account")
    main = page.locator("main")
    assert "Billie Basic" in main.inner_text() and member.email in main.inner_text()
    connected = main.locator("li, tr, article, section").filter(has_text="Liner Notes").last
    assert "Read your credits" in connected.inner_text()  # the scopes granted, in plain words

    connected.get_by_role("button", name=re.compile("revoke|disconnect", re.I)).click()
    confirm = page.get_by_role("button", name=re.compile("revoke|disconnect", re.I))
    if "Liner Notes" in page.locator("main").inner_text() and confirm.count() == 1:  # a confirmation step
        confirm.click()
    page.wait_for_load_state()
    shots.take("account-after-revoke")
    assert "Liner Notes" not in page.locator("main").inner_text() or "revoked" in page.locator("main").inner_text().lower()

    # Revoked at once: the app's refresh is invalid_grant and its access token stops working.
    refreshed = rp.refresh(tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    info = requests.get(live_server(USERINFO), headers={"Authorization": f"Bearer {tokens['access_token']}"},
                        timeout=30)
    assert info.status_code == 401
    db.session.remove()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is None


def test_console_registers_an_app_that_can_sign_in(live_server, app, callback, page, shots):
    require_pages(app, "/console")
    developer = make_member(name="Dana Developer", role="developer")

    page.goto(live_server("/console"))
    if "/login" in page.url:
        shots.take("login")
        sign_in_on_login_page(page, developer.email)
        page.wait_for_url("**/console**")
    shots.take("console")

    page.get_by_role("link", name=re.compile("register", re.I)).first.click()
    shots.take("register-form")
    page.get_by_label(re.compile("^name", re.I)).first.fill("Session Notes")
    page.get_by_label(re.compile("redirect uris", re.I)).first.fill(callback.url)
    page.get_by_role("button", name=re.compile("register|create", re.I)).click()
    page.wait_for_load_state()
    shots.take("registered")

    text = page.locator("main").inner_text()
    client_id = re.search(r"client id\s*:?\s*(\S+)", text, re.I)
    client_secret = re.search(r"secret\s*:?\s*(\S{20,})", text, re.I)
    assert client_id and client_secret, f"the new app's client id and secret are not on the page:\n{text}"
    assert "99" in text or "99" in page.goto(live_server("/console")).text()  # the flat monthly fee is shown

    rp = RelyingParty(live_server.url, client_id.group(1), client_secret.group(1), redirect_uri=callback.url)
    url, params = authorize_url(live_server.url, rp, "openid profile")
    page.goto(url)
    if "/login" in page.url:
        sign_in_on_login_page(page, developer.email)
    page.wait_for_url("**/consent?**")
    shots.take("consent-for-new-app")
    assert "Session Notes" in page.locator("main").inner_text()
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    shots.take("callback")
    assert callback.last()["state"] == params["state"]
    response = rp.exchange(callback.last()["code"])
    assert response.status_code == 200, response.text
    assert "id_token" in response.json()
