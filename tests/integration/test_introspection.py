"""RFC 7662 token introspection at /api/auth/oauth2/introspect, over HTTP against the live server."""

from __future__ import annotations

from datetime import timedelta

import requests

from app.core.extensions import db
from app.models import Token, User
from app.models.base import utcnow
from app.store import store
from tests.factories import db_state, make_client, make_member
from tests.issued import issue, post_as

INTROSPECT = "/api/auth/oauth2/introspect"
INACTIVE = {"active": False}


def introspect(base: str, issued, token: str, **extra) -> requests.Response:
    return post_as(base, INTROSPECT, issued.client_id, issued.rp.client_secret, {"token": token, **extra})


def row_of(access_token: str) -> Token:
    """The token's row, to read or to change (the ORM model: the store's records are read-only)."""
    db.session.remove()
    return db.session.scalar(db.select(Token).where(Token.id == store().tokens.find_access(access_token).id))


def test_an_active_access_token(live_server):
    issued = issue(live_server.url)
    row = row_of(issued.access_token)

    response = introspect(live_server.url, issued, issued.access_token)

    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json()
    assert body == {
        "active": True,
        "scope": "openid profile email offline_access",
        "client_id": issued.client_id,
        "sub": issued.sub,
        "iss": live_server.url,
        "exp": int(row.access_expires_at.timestamp()),
        "iat": int(row.issued_at.timestamp()),
        "token_type": "Bearer",
    }


def test_an_active_refresh_token(live_server):
    issued = issue(live_server.url)
    row = row_of(issued.access_token)
    body = introspect(live_server.url, issued, issued.refresh_token, token_type_hint="refresh_token").json()
    assert body["active"] is True
    assert body["exp"] == int(row.refresh_expires_at.timestamp())
    assert body["sub"] == issued.sub
    assert "token_type" not in body


def test_unknown_expired_revoked_and_rotated_tokens_are_inactive_and_nothing_else(live_server):
    issued = issue(live_server.url)
    assert introspect(live_server.url, issued, "never-issued").json() == INACTIVE

    rotated = issued.rp.refresh(issued.refresh_token).json()
    assert introspect(live_server.url, issued, issued.refresh_token).json() == INACTIVE  # rotated out
    assert introspect(live_server.url, issued, rotated["refresh_token"])
    assert introspect(live_server.url, issued, rotated["refresh_token"]).json()["active"] is True

    row = row_of(rotated["access_token"])
    row.access_expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    assert introspect(live_server.url, issued, rotated["access_token"]).json() == INACTIVE  # expired

    row = row_of(rotated["access_token"])
    row.revoked_at = utcnow()
    db.session.commit()
    assert introspect(live_server.url, issued, rotated["refresh_token"]).json() == INACTIVE  # revoked


def test_another_clients_token_is_inactive(live_server):
    issued = issue(live_server.url)
    other, other_secret = make_client(name="Resource Server")
    response = post_as(live_server.url, INTROSPECT, other.client_id, other_secret, {"token": issued.access_token})
    assert response.status_code == 200
    assert response.json() == INACTIVE


def test_scope_follows_a_membership_downgrade(live_server):
    member = make_member(tier="pro")
    issued = issue(live_server.url, scope="openid analytics:read credits:read", member=member)
    assert (
        introspect(live_server.url, issued, issued.access_token).json()["scope"] == "openid analytics:read credits:read"
    )
    db.session.remove()
    user = db.session.get(User, member.id)
    user.tier = "basic"
    db.session.commit()
    assert introspect(live_server.url, issued, issued.access_token).json()["scope"] == "openid credits:read"


def test_client_authentication_is_required_401(live_server):
    issued = issue(live_server.url)
    public = issue(live_server.url, public=True)
    before = db_state()
    anonymous = requests.post(live_server(INTROSPECT), data={"token": issued.access_token}, timeout=30)
    wrong = requests.post(
        live_server(INTROSPECT), data={"token": issued.access_token}, auth=(issued.client_id, "nope"), timeout=30
    )
    # A public client cannot prove who it is, so it cannot introspect (even its own token).
    public_attempt = post_as(live_server.url, INTROSPECT, public.client_id, None, {"token": public.access_token})
    for response in (anonymous, wrong, public_attempt):
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "invalid_client"
        assert "WWW-Authenticate" in response.headers
        assert "active" not in response.json()
    assert db_state() == before


def test_missing_token_and_wrong_method(live_server):
    client, secret = make_client()
    missing = post_as(live_server.url, INTROSPECT, client.client_id, secret, {})
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    unknown_hint = post_as(
        live_server.url, INTROSPECT, client.client_id, secret, {"token": "t", "token_type_hint": "x"}
    )
    assert unknown_hint.status_code == 200 and unknown_hint.json() == INACTIVE  # a hint is only a hint
    wrong_method = requests.get(live_server(INTROSPECT), timeout=30)
    assert wrong_method.status_code == 405 and wrong_method.json()["error"] == "invalid_request"
    assert "POST" in wrong_method.headers["Allow"]


def test_discovery_advertises_introspection(live_server):
    doc = requests.get(live_server("/.well-known/openid-configuration"), timeout=30).json()
    assert doc["introspection_endpoint"] == live_server(INTROSPECT)
    assert doc["introspection_endpoint_auth_methods_supported"] == ["client_secret_basic", "client_secret_post"]
