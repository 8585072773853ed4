"""The member's account page over HTTP: profile, membership, connected apps, revoke, sign out."""

import re

from app.core.extensions import db
from app.models import AuditEvent, Consent, LoginSession, Token
from tests.api_support import make_catalog
from tests.factories import db_state, make_client, make_member
from tests.flows import Browser, RelyingParty, csrf_token, sign_in
from tests.integration.console_support import flashes, fresh, post_form, signed_in, userinfo


def connect(
    live_server, member, name="Liner Notes", scope="openid profile email credits:read offline_access", **client_kw
):
    client, secret = make_client(name=name, **client_kw)
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope=scope)
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    return client, rp, response.json()


def test_signed_out_goes_to_login_and_comes_back(live_server):
    response = Browser(live_server.url).get("/account")
    assert response.status_code == 302 and response.headers["Location"] == "/login?next=/account"
    member = make_member()
    page = signed_in(live_server.url, member.email, next_path="/account").get("/account")
    assert page.status_code == 200


def test_profile_and_membership(live_server):
    profile_id = make_catalog().mine
    member = make_member(tier="basic", name="Billie Holiday", profile_id=profile_id)
    page = signed_in(live_server.url, member.email, "/account").get("/account")
    text = page.text
    assert "Billie Holiday" in text and member.email in text and member.id in text
    # The credits profile by its name, not its id (issue 21, item 4).
    assert '<span id="credits-profile-name">Ada Mine</span>' in text and profile_id not in text
    assert "Membership: basic" in text
    basic = re.search(r"<strong>basic</strong>.*?</li>", text, re.S).group(0)
    pro = re.search(r"<strong>pro</strong>.*?</li>", text, re.S).group(0)
    assert "your plan" in basic and "read your credits" in basic and "analytics" not in basic
    assert "read your analytics" in pro and "your plan" not in pro
    assert page.headers["Cache-Control"] == "no-store" and page.headers["X-Frame-Options"] == "DENY"
    # A member without a credits profile is told so.
    other = make_member()
    assert "not linked to a credits profile" in signed_in(live_server.url, other.email, "/account").get("/account").text


def test_connected_apps_in_plain_words(live_server):
    member = make_member()
    client, _, _ = connect(live_server, member, scope="openid profile credits:read")
    page = signed_in(live_server.url, member.email, "/account").get("/account").text
    assert "Liner Notes" in page
    assert "See your name" in page and "Read your credits" in page and "See your email address" not in page
    assert re.search(
        r'Connected <time datetime="[^"]+" title="[^"]+ UTC" data-local="date">\d{4}-\d\d-\d\d</time>', page
    )
    assert re.search(r"last used <time", page)
    assert f"/account/apps/{client.client_id}/revoke" in page


def test_revoke_cuts_off_userinfo_and_refresh_at_once(live_server):
    member = make_member()
    client, rp, tokens = connect(live_server, member)
    _other, other_rp, other_tokens = connect(live_server, member, name="Other App")
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 200
    # a second grant of the same app: every token of the app is revoked, not only one family
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    second = rp.exchange(params["code"]).json()

    browser = signed_in(live_server.url, member.email, "/account")
    response = post_form(browser, "/account", f"/account/apps/{client.client_id}/revoke")
    assert response.status_code == 303 and response.headers["Location"] == "/account"
    page = browser.get("/account").text
    assert "Liner Notes is disconnected" in " ".join(flashes(page))
    assert f"/account/apps/{client.client_id}/revoke" not in page and "Other App" in page

    for access in (tokens["access_token"], second["access_token"]):
        answer = userinfo(live_server.url, access)
        assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
    for refresh in (tokens["refresh_token"], second["refresh_token"]):
        answer = rp.refresh(refresh)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"
    # the other app is untouched
    assert userinfo(live_server.url, other_tokens["access_token"]).status_code == 200
    assert other_rp.refresh(other_tokens["refresh_token"]).status_code == 200

    fresh()
    assert db.session.scalar(db.select(Consent).where(Consent.client_id == client.id)) is None
    assert all(t.revoked_at for t in db.session.scalars(db.select(Token).where(Token.client_id == client.id)))
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "consent.revoked"))
    assert event.actor_id == member.id and event.client_id == client.id and event.detail["tokens_revoked"] >= 2
    # The app must ask again: the next sign-in shows the consent page.
    again = Browser(live_server.url)
    again.authorize(rp.auth_params(scope="openid"))
    assert 'type="password"' in again.last.text
    assert 'name="decision"' in again.login(member.email).text


def test_revoke_of_an_app_not_connected_changes_nothing(live_server):
    member = make_member()
    stranger = make_member()
    client, _, _ = connect(live_server, stranger)
    browser = signed_in(live_server.url, member.email, "/account")
    before = db_state()
    for client_id in (client.client_id, "no-such-app"):
        response = post_form(browser, "/account", f"/account/apps/{client_id}/revoke")
        assert response.status_code == 303
        assert "not connected to your account" in " ".join(flashes(browser.get("/account").text))
    assert db_state() == before


def test_revoke_needs_a_csrf_token_and_a_sign_in(live_server):
    member = make_member()
    client, _, tokens = connect(live_server, member)
    client_id = client.client_id
    browser = signed_in(live_server.url, member.email, "/account")
    before = db_state()
    response = browser.post(f"/account/apps/{client_id}/revoke", data={})
    assert response.status_code == 400 and "Form expired" in response.text
    anonymous = Browser(live_server.url)
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', anonymous.get("/login").text).group(1)
    response = anonymous.post(f"/account/apps/{client_id}/revoke", data={"csrf_token": token})
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert db_state() == before
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 200


def test_first_party_app_without_consent_is_listed_and_revocable(live_server):
    member = make_member()
    client, _rp, tokens = connect(live_server, member, name="Credits Studio", trusted=True)
    assert db.session.scalar(db.select(Consent).where(Consent.client_id == client.id)) is None
    browser = signed_in(live_server.url, member.email, "/account")
    page = browser.get("/account").text
    assert "Credits Studio" in page and "first-party" in page
    assert post_form(browser, "/account", f"/account/apps/{client.client_id}/revoke").status_code == 303
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 401
    page = browser.get("/account").text
    assert "Credits Studio is disconnected" in " ".join(flashes(page))
    assert f"/account/apps/{client.client_id}/revoke" not in page


def test_disabled_app_is_shown_as_disabled(live_server):
    member = make_member()
    client, _, _ = connect(live_server, member)
    client.status = "disabled"
    db.session.commit()
    page = signed_in(live_server.url, member.email, "/account").get("/account").text
    assert "disabled by its administrator" in page


def test_sign_out(live_server):
    member = make_member()
    browser = signed_in(live_server.url, member.email, "/account")
    token = csrf_token(browser.get("/account").text)
    response = post_form(browser, "/account", "/account/sign-out")
    assert response.status_code == 303 and response.headers["Location"] == "/login"
    login_page = browser.get("/login")
    assert "You are signed out." in " ".join(flashes(login_page.text))
    assert csrf_token(login_page.text) != token  # a new CSRF secret came with the emptied session
    refused = browser.post("/account/sign-out-everywhere", data={"csrf_token": token})
    assert refused.status_code == 400
    assert browser.get("/account").status_code == 302
    fresh()
    [row] = db.session.scalars(db.select(LoginSession).where(LoginSession.user_id == member.id)).all()
    assert row.ended_at is not None


def test_sign_out_everywhere_ends_every_session(live_server):
    member = make_member()
    someone_else = make_member()
    laptop = signed_in(live_server.url, member.email, "/account")
    phone = signed_in(live_server.url, member.email, "/account")
    bystander = signed_in(live_server.url, someone_else.email, "/account")
    _client, _, tokens = connect(live_server, member)

    response = post_form(phone, "/account", "/account/sign-out-everywhere")
    assert response.status_code == 303
    ended = re.search(r"signed out everywhere \((\d+) (sessions?) ended\)", " ".join(flashes(phone.get("/login").text)))
    assert ended and ended.group(2) == ("session" if ended.group(1) == "1" else "sessions")
    for browser in (laptop, phone):
        assert browser.get("/account").status_code == 302
    assert bystander.get("/account").status_code == 200
    fresh()
    rows = db.session.scalars(db.select(LoginSession).where(LoginSession.user_id == member.id)).all()
    assert len(rows) == 3 and all(r.ended_at is not None for r in rows)
    # Apps keep their tokens (the page says so): revoking an app is the way to cut it off.
    assert userinfo(live_server.url, tokens["access_token"]).status_code == 200
    event = db.session.scalar(db.select(AuditEvent).where(AuditEvent.action == "signout.everywhere"))
    assert event.actor_id == member.id and event.detail == {"sessions_ended": 3}
