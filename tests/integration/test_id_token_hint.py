"""The authorization endpoint's `id_token_hint`, `prompt`, and the parameters it accepts and
ignores (display, ui_locales, claims_locales, acr_values), over HTTP against the live server."""

from __future__ import annotations

from datetime import timedelta

from app.core.extensions import db
from app.models import LoginSession
from tests.factories import db_state, make_member
from tests.flows import AUTHORIZE, query
from tests.issued import issue, jwt_claims, mint_id_token

SCOPE = "openid profile"


def silent(issued, **extra):
    """A prompt=none request from the same browser; returns the callback parameters."""
    params = issued.rp.auth_params(scope=SCOPE, prompt="none", **extra)
    response = issued.browser.get(AUTHORIZE, params=params)
    assert response.status_code == 302, response.text[:300]
    location = response.headers["Location"]
    assert location.startswith(issued.rp.redirect_uri)
    return query(location)


def auth_time_of(issued, params) -> int:
    response = issued.rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    return jwt_claims(response.json()["id_token"])["auth_time"]


def test_prompt_none_with_a_hint_for_the_signed_in_member(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    params = silent(issued, id_token_hint=issued.id_token)
    assert "code" in params and params["iss"] == live_server.url


def test_prompt_none_with_a_hint_for_another_member_is_login_required(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    other = make_member()
    hint = mint_id_token(jwt_claims(issued.id_token) | {"sub": other.sub})
    before = db_state()
    params = silent(issued, id_token_hint=hint)
    assert params["error"] == "login_required"
    assert "code" not in params
    assert db_state() == before


def test_a_hint_for_another_member_without_prompt_none_asks_to_sign_in(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    hint = mint_id_token(jwt_claims(issued.id_token) | {"sub": make_member().sub})
    response = issued.browser.authorize(issued.rp.auth_params(scope=SCOPE, id_token_hint=hint))
    assert response.status_code == 200
    assert 'type="password"' in response.text


def test_a_hint_we_did_not_issue_is_invalid_request(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    params = silent(issued, id_token_hint="eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
    assert params["error"] == "invalid_request"
    assert params["state"]


def test_display_locales_and_acr_values_are_accepted(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    params = silent(issued, display="popup", ui_locales="fr-CA en", claims_locales="de", acr_values="urn:x:loa:2")
    assert "code" in params
    assert issued.rp.exchange(params["code"]).status_code == 200


def test_prompt_none_with_session_and_remembered_consent_keeps_auth_time(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    first = jwt_claims(issued.id_token)["auth_time"]
    assert auth_time_of(issued, silent(issued)) == first


def test_prompt_login_gives_a_later_auth_time(live_server):
    issued = issue(live_server.url, scope=SCOPE)
    first = jwt_claims(issued.id_token)["auth_time"]
    # Move the existing login back in time rather than sleeping: the new login must be later.
    db.session.remove()
    row = db.session.scalar(db.select(LoginSession).where(LoginSession.user_id == issued.member.id))
    row.auth_time = row.auth_time - timedelta(seconds=120)
    db.session.commit()
    earlier = first - 120

    response = issued.browser.authorize(issued.rp.auth_params(scope=SCOPE, prompt="login"))
    assert 'type="password"' in response.text  # prompt=login always shows the login page
    response = issued.browser.login(issued.member.email)
    assert response.status_code == 302
    later = auth_time_of(issued, query(response.headers["Location"]))
    assert later > earlier
    assert later >= first
