"""When a member takes access back, nothing the app was given before survives: a code not yet
redeemed, a sign-in request still open, and (after a downgrade) a scope the membership no longer
includes. Each test is a way a grant used to outlive the member's decision."""

from __future__ import annotations

from app.core.extensions import db
from app.models import AuditEvent, AuthorizationCode, Consent, Interaction, Token, User
from app.services.members import set_tier
from tests.factories import make_client, make_member
from tests.flows import Browser, RelyingParty, sign_in
from tests.integration.console_support import fresh, post_form
from tests.integration.test_account_password import change

SCOPE = "openid profile credits:read offline_access"
PRO_SCOPE = "openid profile credits:read analytics:read offline_access"


def connected(live_server, member, scope=SCOPE):
    """A member connected to a fresh app: tokens redeemed, and the member's browser still signed in."""
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, browser = sign_in(live_server.url, rp, member.email, scope=scope)
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    return client, rp, browser, response.json()


def unredeemed_code(live_server, rp, member, browser, scope=SCOPE) -> str:
    """The app gets a fresh code (single sign-on: no page) and keeps it for later."""
    params, _ = sign_in(live_server.url, rp, member.email, scope=scope, browser=browser)
    return params["code"]


def live_tokens(client_id: int) -> int:
    fresh()
    return db.session.scalar(
        db.select(db.func.count(Token.id)).where(Token.client_id == client_id, Token.revoked_at.is_(None))
    )


def test_a_code_issued_before_a_disconnect_does_not_redeem_after_it(live_server):
    member = make_member()
    client, rp, browser, _ = connected(live_server, member)
    code = unredeemed_code(live_server, rp, member, browser)

    assert post_form(browser, "/account", f"/account/apps/{client.client_id}/revoke").status_code == 303

    response = rp.exchange(code)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert live_tokens(client.id) == 0
    assert f"/account/apps/{client.client_id}/revoke" not in browser.get("/account").text  # not connected again
    assert (
        db.session.scalar(
            db.select(db.func.count(AuthorizationCode.id)).where(
                AuthorizationCode.client_id == client.id, AuthorizationCode.used_at.is_(None)
            )
        )
        == 0
    )


def test_a_first_party_apps_code_dies_with_the_disconnect_too(live_server):
    """A trusted app has no consent to remove: its codes are what must go."""
    member = make_member()
    client, rp, browser, _ = connected(live_server, member, scope="openid offline_access")
    db.session.get(type(client), client.id).trusted = True
    db.session.commit()
    code = unredeemed_code(live_server, rp, member, browser, scope="openid offline_access")
    assert post_form(browser, "/account", f"/account/apps/{client.client_id}/revoke").status_code == 303
    assert rp.exchange(code).json()["error"] == "invalid_grant"
    assert live_tokens(client.id) == 0


def test_disconnecting_every_app_with_a_new_password_kills_their_codes(live_server):
    member = make_member()
    first, first_rp, browser, _ = connected(live_server, member)
    second, second_rp, _, _ = connected(live_server, member)
    code = unredeemed_code(live_server, first_rp, member, browser)
    other_code = unredeemed_code(live_server, second_rp, member, Browser(live_server.url))

    assert change(browser, disconnect_apps="y").status_code == 303

    for rp, leftover in ((first_rp, code), (second_rp, other_code)):
        assert rp.exchange(leftover).json()["error"] == "invalid_grant"
    assert live_tokens(first.id) == live_tokens(second.id) == 0


def test_a_plain_password_change_keeps_codes_in_flight(live_server):
    """Only a disconnect ends grants: a member changing a password for hygiene breaks no sign-in."""
    member = make_member()
    _, rp, browser, _ = connected(live_server, member)
    code = unredeemed_code(live_server, rp, member, browser)
    assert change(browser).status_code == 303
    assert rp.exchange(code).status_code == 200


def test_a_sign_in_request_open_on_the_consent_page_is_closed_by_the_disconnect(live_server):
    member = make_member()
    client, rp, browser, _ = connected(live_server, member)
    page = browser.authorize(rp.auth_params(scope=SCOPE, prompt="consent"))
    assert 'name="decision"' in page.text
    fresh()
    parked = db.session.scalar(db.select(Interaction).where(Interaction.client_id == client.id))
    assert parked.user_id == member.id

    account = Browser(live_server.url, session=browser.session)  # the same member, another tab
    assert post_form(account, "/account", f"/account/apps/{client.client_id}/revoke").status_code == 303

    browser.last = page
    answer = browser.consent(allow=True)
    assert answer.status_code == 400 and "expired" in answer.text
    assert "Location" not in answer.headers  # no code, and no redirect at all
    assert live_tokens(client.id) == 0
    fresh()
    assert db.session.scalar(db.select(db.func.count(Consent.id)).where(Consent.client_id == client.id)) == 0


def test_a_sign_in_request_parked_at_login_learns_its_member(live_server):
    """Parked before anyone signed in, the request is tied to the member at login, so a later
    disconnect reaches it too."""
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    browser = Browser(live_server.url)
    browser.authorize(rp.auth_params(scope=SCOPE))
    fresh()
    parked = db.session.scalar(db.select(Interaction).where(Interaction.client_id == client.id))
    assert parked.user_id is None
    assert 'name="decision"' in browser.login(member.email).text
    fresh()
    assert db.session.get(Interaction, parked.id).user_id == member.id


# -- a downgrade is a decision too ---------------------------------------------------------------


def scopes_of(body: dict) -> set[str]:
    return set(body["scope"].split())


def test_a_refresh_after_a_downgrade_no_longer_carries_analytics(live_server):
    member = make_member(tier="pro")
    client, rp, _, tokens = connected(live_server, member, scope=PRO_SCOPE)
    assert "analytics:read" in scopes_of(tokens)

    set_tier(db.session.get(User, member.id), "basic")
    db.session.commit()

    refreshed = rp.refresh(tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    assert scopes_of(refreshed.json()) == {"openid", "profile", "credits:read", "offline_access"}
    fresh()
    stored = db.session.scalars(db.select(Token.scope).where(Token.client_id == client.id)).all()
    assert stored and all("analytics:read" not in scope for scope in stored)
    # Asking for it back explicitly is refused: it is no longer part of the grant.
    again = rp.refresh(refreshed.json()["refresh_token"], scope=PRO_SCOPE)
    assert again.status_code == 400 and again.json()["error"] == "invalid_scope"


def test_an_upgrade_after_a_downgrade_asks_for_consent_again(live_server):
    member = make_member(tier="pro")
    client, rp, browser, tokens = connected(live_server, member, scope=PRO_SCOPE)
    user = db.session.get(User, member.id)
    set_tier(user, "basic")
    db.session.commit()
    set_tier(db.session.get(User, member.id), "pro")
    db.session.commit()

    # The old grant does not read analytics again...
    refreshed = rp.refresh(tokens["refresh_token"])
    assert refreshed.status_code == 200 and "analytics:read" not in scopes_of(refreshed.json())
    # ...and a new sign-in asks the member before analytics is shared again.
    page = browser.authorize(rp.auth_params(scope=PRO_SCOPE))
    assert 'name="decision"' in page.text and 'value="analytics:read"' in page.text
    fresh()
    consent = db.session.scalar(db.select(Consent).where(Consent.client_id == client.id))
    assert "analytics:read" not in consent.scope.split()
    event = db.session.scalars(
        db.select(AuditEvent).where(AuditEvent.action == "user.tier_changed").order_by(AuditEvent.id)
    ).first()
    assert event.detail["consents_narrowed"] == 1 and event.detail["tokens_narrowed"] == 1


def test_a_code_issued_before_a_downgrade_redeems_without_analytics(live_server):
    member = make_member(tier="pro")
    client, rp, browser, _ = connected(live_server, member, scope=PRO_SCOPE)
    code = unredeemed_code(live_server, rp, member, browser, scope=PRO_SCOPE)
    set_tier(db.session.get(User, member.id), "basic")
    db.session.commit()
    body = rp.exchange(code).json()
    assert scopes_of(body) == {"openid", "profile", "credits:read", "offline_access"}
    fresh()
    newest = db.session.scalars(db.select(Token).where(Token.client_id == client.id).order_by(Token.id.desc())).first()
    assert newest.scope == body["scope"]
