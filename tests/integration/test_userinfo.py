"""Userinfo: claims by scope, the stable user id, and RFC 6750 errors."""

from datetime import timedelta

import jwt as pyjwt
import pytest
import requests

from app.core.extensions import db
from app.models import Token
from app.models.base import utcnow
from tests.flows import USERINFO, sign_in


def tokens_for(live_server, rp, email, scope):
    params, _ = sign_in(live_server.url, rp, email, scope=scope)
    return rp.exchange(params["code"]).json()


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_userinfo_releases_what_the_scopes_allow(live_server, rp, member, settings, method):
    tokens = tokens_for(live_server, rp, member.email, "openid email")
    response = requests.request(
        method, live_server(USERINFO), headers={"Authorization": f"Bearer {tokens['access_token']}"}, timeout=30
    )
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    body = response.json()
    id_token = pyjwt.decode(tokens["id_token"], options={"verify_signature": False})
    assert body["sub"] == id_token["sub"] == member.sub
    assert body["email"] == member.email and body["email_verified"] is True
    assert body[settings["ISSUER_URL"] + "/claims/user_id"] == member.id
    assert "name" not in body  # no profile scope


def test_profile_scope_releases_the_name(live_server, rp, member):
    tokens = tokens_for(live_server, rp, member.email, "openid profile")
    body = requests.get(
        live_server(USERINFO), headers={"Authorization": f"Bearer {tokens['access_token']}"}, timeout=30
    ).json()
    assert body["name"] == "Bea Basic" and "email" not in body


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer not-a-token", "Basic abc", "bearer " + "x" * 600])
def test_missing_or_unknown_tokens_are_invalid_token(live_server, header):
    headers = {"Authorization": header} if header else {}
    response = requests.get(live_server(USERINFO), headers=headers, timeout=30)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert response.headers["Cache-Control"] == "no-store"
    assert response.json()["error"] == "invalid_token"


def test_expired_and_revoked_tokens_are_invalid_token(live_server, rp, member):
    tokens = tokens_for(live_server, rp, member.email, "openid")
    auth = {"Authorization": f"Bearer {tokens['access_token']}"}
    row = db.session.scalar(db.select(Token))
    row.access_expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    assert requests.get(live_server(USERINFO), headers=auth, timeout=30).status_code == 401
    row.access_expires_at = utcnow() + timedelta(hours=1)
    row.revoked_at = utcnow()
    db.session.commit()
    response = requests.get(live_server(USERINFO), headers=auth, timeout=30)
    assert response.status_code == 401 and 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_stable_ids_survive_email_and_name_changes(live_server, rp, member, settings):
    first = tokens_for(live_server, rp, member.email, "openid profile email")
    before = pyjwt.decode(first["id_token"], options={"verify_signature": False})
    member.email, member.name = "renamed@example.test", "Bea Renamed"
    db.session.commit()
    second = tokens_for(live_server, rp, "renamed@example.test", "openid profile email")
    after = pyjwt.decode(second["id_token"], options={"verify_signature": False})
    claim = settings["ISSUER_URL"] + "/claims/user_id"
    assert before["sub"] == after["sub"] and before[claim] == after[claim]
    assert after["email"] == "renamed@example.test" and after["name"] == "Bea Renamed"
