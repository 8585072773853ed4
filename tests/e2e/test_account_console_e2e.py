"""The member's account page (revoke a connected app) and the console (register an app, then sign
in with it), in a real browser, found by what a person sees: labels, headings, buttons. Every
page passed is screenshotted under artifacts/e2e/."""

from __future__ import annotations

import requests

from app.core.extensions import db
from app.core.scopes import SCOPES
from app.models import Client, Consent, Token
from app.services.fees import CURRENCY, MONTHLY_FEE
from tests.e2e.helpers import authorize_url, verify_id_token
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import USERINFO, RelyingParty

SCOPE = "openid profile credits:read offline_access"


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def sign_in_on_login_page(page, email: str) -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


def connect(page, live_server, callback, rp: RelyingParty, email: str, shots) -> dict:
    """Sign in to the app and allow it: returns the tokens the app got."""
    url, params = authorize_url(live_server.url, rp, SCOPE)
    page.goto(url)
    shots.take("login")
    sign_in_on_login_page(page, email)
    page.wait_for_url("**/consent?**")
    shots.take("consent")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    shots.take("callback")
    assert callback.last()["state"] == params["state"]
    response = rp.exchange(callback.last()["code"])
    assert response.status_code == 200, response.text
    tokens = response.json()
    assert {"access_token", "refresh_token", "id_token"} <= tokens.keys()
    return tokens


def userinfo_status(live_server, access_token: str) -> int:
    return requests.get(
        live_server(USERINFO), headers={"Authorization": f"Bearer {access_token}"}, timeout=30
    ).status_code


def test_account_page_revokes_a_connected_app(live_server, callback, page, shots):
    from playwright.sync_api import expect

    member = make_member(name="Billie Basic")
    client, secret = make_client(name="Liner Notes", redirect_uris=[callback.url])
    rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
    tokens = connect(page, live_server, callback, rp, member.email, shots)
    assert userinfo_status(live_server, tokens["access_token"]) == 200

    page.goto(live_server("/account"))
    assert page.title() == "Your account · Credits ID"
    shots.take("account")
    profile = page.get_by_role("region", name="Profile")
    expect(profile).to_contain_text("Billie Basic")
    expect(profile).to_contain_text(member.email)

    # The app is listed under its own heading, with what it may do in the consent page's words.
    apps = page.get_by_role("region", name="Connected apps")
    card = apps.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Liner Notes"))
    expect(card).to_have_count(1)
    expect(card.get_by_role("list").get_by_role("listitem")).to_have_text(
        [SCOPES[s].description for s in SCOPE.split()]
    )

    with page.expect_navigation():
        card.get_by_role("button", name="Revoke access for Liner Notes…").click()
    # Revoking asks first (issue 21, item 4): a page that says what it does, with the button that does it.
    expect(page.get_by_role("heading", name="Disconnect Liner Notes?")).to_be_visible()
    shots.take("revoke-confirm")
    with page.expect_navigation():
        page.get_by_role("button", name="Revoke access for Liner Notes", exact=True).click()
    assert page.url == live_server("/account")
    shots.take("account-after-revoke")
    expect(page.get_by_role("status")).to_have_text(
        "Liner Notes is disconnected: it can no longer read your data, and its sign-in has ended."
    )
    expect(apps.get_by_role("heading", name="Liner Notes")).to_have_count(0)
    expect(apps).to_contain_text("No apps are connected to your account.")
    no_page_problems(page)

    # Revoked at once: the app's refresh is invalid_grant and its access token stops working.
    refreshed = rp.refresh(tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert userinfo_status(live_server, tokens["access_token"]) == 401
    db.session.remove()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is None
    issued = db.session.scalars(db.select(Token).where(Token.user_id == member.id)).all()
    assert issued and all(t.revoked_at is not None for t in issued)


def test_console_registers_an_app_that_can_sign_in(live_server, callback, page, shots):
    from playwright.sync_api import expect

    developer = make_member(name="Dana Developer", role="developer")

    page.goto(live_server("/console"))
    assert page.url.startswith(live_server("/login?")), page.url  # the console asks who you are first
    shots.take("login")
    sign_in_on_login_page(page, developer.email)
    assert page.url == live_server("/console"), page.url
    expect(page.get_by_role("heading", name="Your applications")).to_be_visible()
    expect(page.locator("main")).to_contain_text(
        f"Each registered application costs {MONTHLY_FEE} {CURRENCY} per month"
    )
    shots.take("console")

    page.get_by_role("link", name="Register an app", exact=True).click()
    page.wait_for_url("**/console/apps/new")
    expect(page.get_by_role("heading", name="Register an app")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Session Notes")
    page.get_by_label("Redirect URIs (one per line)").fill(callback.url)
    expect(page.get_by_label("Confidential — a server that keeps a client secret")).to_be_checked()
    shots.take("register-form")
    with page.expect_navigation():
        page.get_by_role("button", name="Register").click()

    # The secret page: the client id and the secret, shown this once.
    expect(page.get_by_role("heading", name="Session Notes is registered")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("It is shown only this once")
    shots.take("registered")
    client_id = page.locator("#client-id").inner_text().strip()
    client_secret = page.locator("#client-secret").inner_text().strip()
    assert len(client_secret) >= 32, client_secret
    db.session.remove()
    stored = db.session.scalar(db.select(Client).where(Client.client_id == client_id))
    assert stored is not None and stored.name == "Session Notes" and stored.owner_id == developer.id
    assert stored.check_client_secret(client_secret) and stored.client_secret_hash != client_secret  # a hash
    no_page_problems(page)

    # Past that page the secret is nowhere to be seen again.
    page.get_by_role("link", name="I have copied it — go to the app").click()
    page.wait_for_url(f"**/console/apps/{client_id}")
    expect(page.get_by_role("heading", name="Session Notes")).to_be_visible()
    assert client_secret not in page.content()
    shots.take("app-detail")

    # The new app signs the developer in: consent (it is not first-party), callback, token exchange.
    rp = RelyingParty(live_server.url, client_id, client_secret, redirect_uri=callback.url)
    url, params = authorize_url(live_server.url, rp, "openid profile")
    page.goto(url)
    page.wait_for_url("**/consent?**")  # already signed in: no login page this time
    expect(page.locator("main")).to_contain_text("Session Notes wants to access your Credits ID account")
    shots.take("consent-for-new-app")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    shots.take("callback")
    assert callback.last()["state"] == params["state"]
    response = rp.exchange(callback.last()["code"])
    assert response.status_code == 200, response.text
    claims = verify_id_token(live_server.url, response.json()["id_token"], client_id, params["nonce"])
    assert claims["sub"] == developer.sub
    assert userinfo_status(live_server, response.json()["access_token"]) == 200
