"""The account page as a member meets it (issue 21, item 4), in a real browser: each connected
app with its logo (or its initial) and homepage, the credits profile by name, and a revoke that
asks first - and changes nothing when the member keeps the app."""

from __future__ import annotations

from app.core.extensions import db
from app.models import Client, Consent, Token
from tests.api_support import make_catalog
from tests.e2e.test_account_console_e2e import connect, no_page_problems
from tests.factories import make_client, make_member
from tests.flows import RelyingParty


def test_connected_apps_show_logo_and_homepage_and_revoke_asks_first(live_server, callback, page, shots):
    from playwright.sync_api import expect

    catalog = make_catalog(credits=3)
    member = make_member(name="Parker Pro", tier="pro", profile_id=catalog.mine)
    client, secret = make_client(
        name="Liner Notes", redirect_uris=[callback.url], homepage_url="https://liner.example.com/"
    )
    db.session.get(Client, client.id).logo_url = live_server("/static/favicon.svg")  # loads: this origin
    db.session.commit()
    rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
    connect(page, live_server, callback, rp, member.email, shots)

    page.goto(live_server("/account"))
    page.wait_for_load_state("networkidle")
    profile = page.get_by_role("region", name="Profile")
    expect(profile.locator("#credits-profile-name")).to_have_text("Ada Mine")  # by name, not its UUID
    expect(profile).not_to_contain_text(catalog.mine)
    apps = page.get_by_role("region", name="Connected apps")
    card = apps.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Liner Notes"))
    logo = card.locator("img.app-logo-img")
    expect(logo).to_have_count(1)
    assert logo.evaluate("img => img.complete && img.naturalWidth > 0")
    homepage = card.get_by_role("link", name="https://liner.example.com/")
    expect(homepage).to_have_attribute("href", "https://liner.example.com/")
    expect(homepage).to_have_attribute("rel", "noopener noreferrer")
    shots.take("account-with-app")

    card.get_by_role("button", name="Revoke access for Liner Notes…").click()
    expect(page.get_by_role("heading", name="Disconnect Liner Notes?")).to_be_visible()
    expect(page.locator("main")).to_contain_text("every token it holds for you stops working")
    shots.take("revoke-confirm")
    page.get_by_role("link", name="Keep it connected").click()
    assert page.url == live_server("/account")
    db.session.remove()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is not None
    assert all(t.revoked_at is None for t in db.session.scalars(db.select(Token).where(Token.user_id == member.id)))

    apps.get_by_role("button", name="Revoke access for Liner Notes…").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Revoke access for Liner Notes", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Liner Notes is disconnected")
    db.session.remove()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is None
    no_page_problems(page)

    # An app that is not connected has no confirmation page to show.
    page.goto(live_server(f"/account/apps/{client.client_id}/revoke"))
    assert page.url == live_server("/account")
    expect(page.get_by_role("alert")).to_have_text("That app is not connected to your account.")


def test_a_connected_app_without_a_working_logo_shows_its_initial(live_server, callback, page, shots):
    from playwright.sync_api import expect

    member = make_member()
    client, secret = make_client(name="Setlist", redirect_uris=[callback.url])
    db.session.get(Client, client.id).logo_url = "https://127.0.0.1:1/logo.png"
    db.session.commit()
    connect(
        page,
        live_server,
        callback,
        RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url),
        member.email,
        shots,
    )
    page.goto(live_server("/account"))
    page.wait_for_load_state("networkidle")
    card = (
        page.get_by_role("region", name="Connected apps")
        .get_by_role("listitem")
        .filter(has=page.get_by_role("heading", name="Setlist"))
    )
    expect(card.locator("img")).to_have_count(0)  # the failed logo is gone
    expect(card.locator(".app-initial")).to_have_text("S")
    shots.take("account-app-initial")
