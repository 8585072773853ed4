"""RFC 7009 token revocation at /api/auth/oauth2/revoke, over HTTP against the live server."""

from __future__ import annotations

import requests

from app.core.extensions import db
from app.models import Token
from app.store import store
from tests.factories import db_state, make_client, make_member
from tests.flows import USERINFO
from tests.issued import issue, post_as

REVOKE = "/api/auth/oauth2/revoke"


def userinfo_status(base: str, access_token: str) -> int:
    return requests.get(base + USERINFO, headers={"Authorization": f"Bearer {access_token}"}, timeout=30).status_code


def family_rows(grant_id: str) -> list[Token]:
    db.session.remove()
    return db.session.scalars(db.select(Token).where(Token.grant_id == grant_id).order_by(Token.id)).all()


def test_revoking_a_refresh_token_revokes_the_whole_grant_family(live_server):
    first = issue(live_server.url)
    rotated = first.rp.refresh(first.refresh_token)
    assert rotated.status_code == 200, rotated.text
    second = rotated.json()
    grant_id = family_rows_for(first.access_token).grant_id

    response = post_as(
        live_server.url,
        REVOKE,
        first.client_id,
        first.rp.client_secret,
        {"token": second["refresh_token"], "token_type_hint": "refresh_token"},
    )

    assert response.status_code == 200
    assert response.json() == {}
    assert response.headers["Cache-Control"] == "no-store"
    rows = family_rows(grant_id)
    assert len(rows) == 2 and all(row.revoked_at is not None for row in rows)
    # Every access token of the family stops working, the first one included.
    assert userinfo_status(live_server.url, first.access_token) == 401
    assert userinfo_status(live_server.url, second["access_token"]) == 401
    again = first.rp.refresh(second["refresh_token"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def family_rows_for(access_token: str) -> Token:

    db.session.remove()
    return store().tokens.find_access(access_token)


def test_revoking_an_access_token_ends_it_and_leaves_other_grants_alone(live_server):
    member = make_member()
    client = make_client()
    one = issue(live_server.url, member=member, client=client)
    two = issue(live_server.url, member=member, client=client, browser=one.browser)

    response = post_as(
        live_server.url, REVOKE, one.client_id, one.rp.client_secret, {"token": one.access_token}
    )  # no hint: the server looks everywhere

    assert response.status_code == 200
    assert userinfo_status(live_server.url, one.access_token) == 401
    assert family_rows_for(one.access_token).revoked_at is not None
    # The other grant of the same member and app is untouched.
    assert userinfo_status(live_server.url, two.access_token) == 200
    assert two.rp.refresh(two.refresh_token).status_code == 200


def test_a_wrong_hint_is_only_a_hint(live_server):
    issued = issue(live_server.url)
    response = post_as(
        live_server.url,
        REVOKE,
        issued.client_id,
        issued.rp.client_secret,
        {"token": issued.refresh_token, "token_type_hint": "access_token"},
    )
    assert response.status_code == 200
    assert issued.rp.refresh(issued.refresh_token).json()["error"] == "invalid_grant"
    assert userinfo_status(live_server.url, issued.access_token) == 401


def test_unknown_token_is_200_and_changes_nothing(live_server):
    client, secret = make_client()
    client_id = client.client_id
    before = db_state()
    response = post_as(live_server.url, REVOKE, client_id, secret, {"token": "not-a-token-we-issued"})
    assert response.status_code == 200
    assert response.json() == {}
    assert db_state() == before


def test_a_token_of_another_client_is_refused_and_stays_valid(live_server):
    issued = issue(live_server.url)
    other, other_secret = make_client(name="Other App")
    other_id = other.client_id
    before = db_state()

    response = post_as(live_server.url, REVOKE, other_id, other_secret, {"token": issued.access_token})

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert issued.access_token not in response.text
    assert db_state() == before
    assert userinfo_status(live_server.url, issued.access_token) == 200


def test_public_client_revokes_its_own_token_with_its_client_id(live_server):
    issued = issue(live_server.url, public=True)
    assert issued.rp.client_secret is None
    response = post_as(live_server.url, REVOKE, issued.client_id, None, {"token": issued.refresh_token})
    assert response.status_code == 200
    assert userinfo_status(live_server.url, issued.access_token) == 401


def test_client_authentication_is_required(live_server):
    issued = issue(live_server.url)
    before = db_state()
    anonymous = requests.post(live_server(REVOKE), data={"token": issued.access_token}, timeout=30)
    wrong_secret = requests.post(
        live_server(REVOKE), data={"token": issued.access_token}, auth=(issued.client_id, "wrong"), timeout=30
    )
    garbage_basic = requests.post(
        live_server(REVOKE),
        data={"token": issued.access_token},
        headers={"Authorization": "Basic %%%not-base64"},
        timeout=30,
    )
    for response in (anonymous, wrong_secret, garbage_basic):
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "invalid_client"
        assert response.headers["WWW-Authenticate"].startswith("Basic ")
    assert db_state() == before
    assert userinfo_status(live_server.url, issued.access_token) == 200


def test_malformed_requests(live_server):
    client, secret = make_client()
    missing = post_as(live_server.url, REVOKE, client.client_id, secret, {})
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    unknown_hint = post_as(
        live_server.url, REVOKE, client.client_id, secret, {"token": "x", "token_type_hint": "id_token"}
    )
    assert unknown_hint.status_code == 200  # a hint is only a hint
    wrong_method = requests.get(live_server(REVOKE), timeout=30)
    assert wrong_method.status_code == 405
    assert wrong_method.headers["Content-Type"].startswith("application/json")


def test_discovery_advertises_revocation(live_server):
    doc = requests.get(live_server("/.well-known/openid-configuration"), timeout=30).json()
    assert doc["revocation_endpoint"] == live_server(REVOKE)
    assert doc["revocation_endpoint_auth_methods_supported"] == ["client_secret_basic", "client_secret_post", "none"]
