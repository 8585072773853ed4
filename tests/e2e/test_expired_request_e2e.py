"""An expired sign-in request in a real browser (and on a 390x844 phone) is no dead end: the
password typed after it expired still signs the member in and the same request starts again (on
to the consent page, then the app's callback with its own state); a request that expires on the
consent page shows "Start again" and the app's homepage instead of a bare 400."""

from __future__ import annotations

from datetime import timedelta

from app.core.extensions import db
from app.models import Interaction
from app.models.base import utcnow
from tests.e2e.conftest import ARTIFACTS, TIMEOUT_MS, PageProblems, Shots
from tests.e2e.helpers import authorize_url
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import RelyingParty


def no_page_problems(page) -> None:
    assert page.problems.messages == [], f"the browser reported errors (CSP?): {page.problems.messages}"


def expire_every_open_request() -> None:
    db.session.expire_all()
    for row in Interaction.query.filter(Interaction.consumed_at.is_(None)):
        row.expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()


def app_for(live_server, callback):
    client, secret = make_client(
        redirect_uris=[callback.url], name="Liner Notes", homepage_url="https://liner-notes.example"
    )
    return RelyingParty(live_server.url, client.client_id, secret, redirect_uri=callback.url)


def test_a_password_typed_after_the_request_expired_goes_on_to_the_app(live_server, callback, page, shots):
    member = make_member()
    rp = app_for(live_server, callback)
    url, params = authorize_url(live_server.url, rp, "openid profile")
    page.goto(url)
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    shots.take("login-left-open")
    expire_every_open_request()  # the member went for coffee
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url("**/consent?**")
    assert "Liner Notes wants to access your Credits ID account" in page.locator("main").inner_text()
    shots.take("consent-after-restart")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(callback.url + "*")
    back = callback.last()
    assert back["state"] == params["state"] and "code" in back  # the app's own request, answered
    assert rp.exchange(back["code"]).status_code == 200
    no_page_problems(page)


def test_a_request_that_expired_on_the_consent_page_offers_to_start_again(live_server, callback, chromium):
    phone = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.set_default_timeout(TIMEOUT_MS)
    phone.set_default_navigation_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.problems = PageProblems(page)
        shots = Shots(page, ARTIFACTS / "test_a_request_that_expired_on_the_consent_page_offers_to_start_again")
        member = make_member()
        rp = app_for(live_server, callback)
        url, params = authorize_url(live_server.url, rp, "openid profile")
        page.goto(url)
        page.get_by_label("Email").fill(member.email)
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        with page.expect_navigation():
            page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_url("**/consent?**")
        expire_every_open_request()
        with page.expect_navigation() as answer:
            page.get_by_role("button", name="Allow").click()
        assert answer.value.status == 400
        main = page.locator("main").inner_text()
        assert "Sign-in request expired" in main and "Liner Notes" in main and "Start it again" in main
        assert page.get_by_role("link", name="Go to Liner Notes").get_attribute("href") == "https://liner-notes.example"
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        shots.take("expired-start-again")
        assert callback.received == []

        page.get_by_role("link", name="Start again").click()
        page.wait_for_url("**/consent?**")  # still signed in: straight to the same question
        shots.take("consent-again")
        page.get_by_role("button", name="Allow").click()
        page.wait_for_url(callback.url + "*")
        assert callback.last()["state"] == params["state"]
        no_page_problems(page)
    finally:
        phone.close()
