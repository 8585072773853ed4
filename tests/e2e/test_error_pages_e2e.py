"""Error pages as a member meets them (issue 21, item 7), in a real browser: a refused sign-in
names the app and the refused redirect URI (as text, escaped, never a link) with a hint for the
app's developer; a disabled app is named; the console's 403 says what fits and links to /account."""

from __future__ import annotations

from urllib.parse import urlencode

from app.core.extensions import db
from app.services.apps import disable_app
from tests.conftest import heard_elsewhere
from tests.e2e.test_account_console_e2e import no_page_problems, sign_in_on_login_page
from tests.factories import make_client, make_member
from tests.flows import AUTHORIZE, RelyingParty

HOSTILE = 'https://evil.example/cb?x="><img src=x>'


def test_a_refused_redirect_uri_is_named_with_the_app_and_a_developer_hint(live_server, callback, page, shots):
    from playwright.sync_api import expect

    client, secret = make_client(name="Liner Notes", redirect_uris=[callback.url])
    rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
    params = dict(rp.auth_params("openid"), redirect_uri=HOSTILE)
    response = page.goto(f"{live_server.url}{AUTHORIZE}?{urlencode(params)}")
    assert response.status == 400
    expect(page.get_by_role("heading", level=1)).to_have_text("Unregistered redirect address")
    expect(page.locator("#error-app")).to_have_text("Liner Notes")
    expect(page.locator("#error-redirect-uri")).to_have_text(HOSTILE)  # shown as text: escaped, not markup
    expect(page.locator("main img")).to_have_count(0)
    expect(page.locator('a[href^="https://evil.example"]')).to_have_count(0)  # never a link
    hint = page.locator("#developer-hint")
    expect(hint).to_contain_text("For the app's developer")
    hint.locator("summary").click()
    expect(hint).to_contain_text("Redirect URIs are matched exactly")
    expect(page.locator("main")).to_contain_text("Go back to Liner Notes and tell its team")
    shots.take("refused-redirect-uri")
    assert callback.received == []
    no_page_problems(page)

    disable_app(client, None)
    db.session.commit()
    heard_elsewhere()  # the live server is another process: it drops its copy of the app at the notice
    response = page.goto(f"{live_server.url}{AUTHORIZE}?{urlencode(rp.auth_params('openid'))}")
    assert response.status == 403
    expect(page.locator("#error-app")).to_have_text("Liner Notes")
    expect(page.locator("main")).to_contain_text("Liner Notes has been disabled by its administrator")
    expect(page.locator("main")).to_contain_text("Go back to Liner Notes later")
    expect(page.locator("main")).not_to_contain_text("sign in with another account")  # advice that fits a 403 here
    shots.take("disabled-app")
    no_page_problems(page)


def test_the_console_403_advises_what_fits_and_links_to_the_account_page(live_server, page, shots):
    from playwright.sync_api import expect

    member = make_member(name="Billie Basic")
    page.goto(live_server("/console"))
    sign_in_on_login_page(page, member.email)
    expect(page.get_by_role("heading", level=1)).to_have_text("Developer account needed")
    main = page.locator("main")
    expect(main).to_contain_text("ask an administrator of Credits ID to make your account a developer account")
    expect(main).not_to_contain_text("sign in with another account")
    expect(main).not_to_contain_text("(/account)")
    shots.take("console-403")
    page.get_by_role("link", name="Your account page").click()
    page.wait_for_url(live_server("/account"))
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    no_page_problems(page)


def test_a_consent_answered_twice_names_the_app(live_server, callback, page, shots):
    from playwright.sync_api import expect

    member = make_member()
    client, secret = make_client(name="Liner Notes", redirect_uris=[callback.url])
    rp = RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)
    page.goto(f"{live_server.url}{AUTHORIZE}?{urlencode(rp.auth_params('openid profile'))}")
    sign_in_on_login_page(page, member.email)
    page.wait_for_url("**/consent?**")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    page.go_back()  # the consent page again, from the browser's history: already answered
    expect(page.get_by_role("heading", level=1)).to_have_text("Request already completed")
    expect(page.locator("#error-app")).to_have_text("Liner Notes")
    shots.take("consent-answered-twice")
    assert len(callback.received) == 1


def test_an_unknown_client_id_is_echoed_with_the_developers_section_on_a_phone(live_server, chromium):
    from playwright.sync_api import expect

    from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots

    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.set_default_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.problems = PageProblems(page)
        shots = Shots(page, ARTIFACTS / "test_an_unknown_client_id_is_echoed_with_the_developers_section_on_a_phone")
        refused = "liner-notes-staging-0123456789abcdef0123456789abcdef"
        response = page.goto(
            f"{live_server.url}{AUTHORIZE}?{urlencode({'response_type': 'code', 'client_id': refused})}"
        )
        assert response.status == 400
        expect(page.get_by_role("heading", level=1)).to_have_text("Unknown application")
        expect(page.locator("#error-client-id")).to_have_text(refused)
        hint = page.locator("#developer-hint")
        hint.locator("summary").click()
        expect(hint).to_contain_text("No app has this client_id")
        expect(page.locator("main")).to_contain_text("tell its team")
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        shots.take("unknown-client-id-phone")
        no_page_problems(page)
    finally:
        phone.close()
