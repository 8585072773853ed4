"""Partial consent: the member unticks optional scopes; the token says what was granted."""

from __future__ import annotations

import requests

from app.core.extensions import db
from app.models import Consent
from tests.factories import make_client, make_member
from tests.flows import USERINFO, Browser, RelyingParty, query
from tests.issued import jwt_claims

REQUESTED = "openid profile email credits:read offline_access"


def start(live_server, tier: str = "basic", scope: str = REQUESTED):
    member = make_member(tier=tier)
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params(scope=scope))
    page = browser.login(member.email)
    assert page.status_code == 200 and 'name="decision"' in page.text
    return member, client.id, rp, browser, page


def finish(rp, response) -> dict:
    assert response.status_code == 302, response.text[:300]
    params = query(response.headers["Location"])
    token = rp.exchange(params["code"])
    assert token.status_code == 200, token.text
    return token.json()


def remembered(member_id: str, client_pk: int) -> str:
    db.session.remove()
    row = db.session.scalar(db.select(Consent).where(Consent.user_id == member_id, Consent.client_id == client_pk))
    return row.scope


def test_unticked_scopes_are_not_granted(live_server):
    member, client_pk, rp, browser, page = start(live_server)
    # Every optional scope is a ticked checkbox; openid is not a checkbox at all.
    for scope in ("profile", "email", "credits:read", "offline_access"):
        assert f'name="scope" value="{scope}" checked' in page.text
    assert 'value="openid"' not in page.text

    body = finish(rp, browser.consent(allow=True, scopes=["profile", "offline_access"]))

    assert body["scope"] == "openid profile offline_access"
    claims = jwt_claims(body["id_token"])
    assert claims["name"] == "Test Member" and "email" not in claims
    info = requests.get(live_server(USERINFO), headers={"Authorization": f"Bearer {body['access_token']}"}, timeout=30)
    assert info.status_code == 200 and "email" not in info.json() and info.json()["name"] == "Test Member"
    assert remembered(member.id, client_pk) == "openid profile offline_access"
    # Only what was granted is remembered: asking again for email shows the consent page again.
    again = browser.authorize(rp.auth_params(scope=REQUESTED))
    assert again.status_code == 200 and 'name="decision"' in again.text


def test_unticking_a_scope_granted_before_takes_it_back(live_server):
    """The member once shared their email; asked again (the app now also wants credits), they
    untick it. The next sign-in must not get the email silently from the old consent."""
    member, client_pk, rp, browser, _ = start(live_server, scope="openid profile email analytics:read")
    finish(rp, browser.consent(allow=True, scopes=["profile", "email"]))
    assert remembered(member.id, client_pk) == "openid profile email"

    page = browser.authorize(rp.auth_params(scope="openid profile email credits:read"))
    assert 'name="decision"' in page.text  # credits:read is new
    body = finish(rp, browser.consent(allow=True, scopes=["profile", "credits:read"]))
    assert body["scope"] == "openid profile credits:read"
    # email was asked about and unticked: taken back. Nothing else asked about is forgotten.
    assert remembered(member.id, client_pk) == "openid profile credits:read"

    again = browser.authorize(rp.auth_params(scope="openid profile email"))
    assert again.status_code == 200 and 'name="decision"' in again.text  # asked again, not granted silently
    silent = browser.authorize(rp.auth_params(scope="openid profile credits:read"))
    assert silent.status_code == 302 and "code=" in silent.headers["Location"]


def test_scopes_not_asked_about_stay_granted(live_server):
    member, client_pk, rp, browser, _ = start(live_server, scope="openid profile email")
    finish(rp, browser.consent(allow=True, scopes=["profile", "email"]))
    browser.authorize(rp.auth_params(scope="openid credits:read", prompt="consent"))
    finish(rp, browser.consent(allow=True, scopes=["credits:read"]))
    assert remembered(member.id, client_pk) == "openid profile email credits:read"


def test_unticking_everything_still_grants_openid_only(live_server):
    _member, _client_pk, rp, browser, _ = start(live_server)
    body = finish(rp, browser.consent(allow=True, scopes=[]))
    assert body["scope"] == "openid"
    assert "refresh_token" not in body  # offline_access was unticked


def test_a_posted_scope_that_was_not_requested_is_not_granted(live_server):
    _member, _client_pk, rp, browser, _ = start(live_server, tier="pro", scope="openid profile")
    body = finish(rp, browser.consent(allow=True, scopes=["profile", "analytics:read", "email", "bogus"]))
    assert body["scope"] == "openid profile"


def test_the_membership_limits_what_ticking_can_grant(live_server):
    _member, _client_pk, rp, browser, page = start(
        live_server, tier="basic", scope="openid analytics:read credits:read"
    )
    assert 'value="analytics:read"' not in page.text  # shown as not included, no checkbox
    assert "Not included in your basic membership" in page.text
    body = finish(rp, browser.consent(allow=True, scopes=["analytics:read", "credits:read"]))
    assert body["scope"] == "openid credits:read"


def test_deny_grants_nothing(live_server):
    member, _client_pk, _rp, browser, _ = start(live_server)
    response = browser.consent(allow=False)
    params = query(response.headers["Location"])
    assert params["error"] == "access_denied" and "code" not in params
    db.session.remove()
    assert db.session.scalar(db.select(Consent).where(Consent.user_id == member.id)) is None
