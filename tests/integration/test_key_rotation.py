"""Rotating the signing key without breaking relying parties: tokens signed by the old key keep
verifying from the published key set until that key expires; new tokens carry the new kid."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from app.core.extensions import db
from app.models import SigningKey
from app.models.base import utcnow
from app.protocol.jwks import keystore
from tests.flows import JWKS
from tests.issued import issue, jwt_header

END_SESSION = "/api/auth/oauth2/endsession"


def published(base: str) -> tuple[KeySet, requests.Response]:
    response = requests.get(base + JWKS, timeout=30)
    assert response.status_code == 200
    return KeySet.import_key_set(response.json()), response


def verifies(token: str, key_set: KeySet) -> bool:
    try:
        jwt.decode(token, key_set, algorithms=["RS256"])
    except (JoseError, ValueError):
        return False
    return True


def test_rotation_keeps_old_tokens_verifiable_until_the_old_key_expires(live_server):
    old_kid = keystore.snapshot().signing_kid
    before = issue(live_server.url, scope="openid profile offline_access")
    assert jwt_header(before.id_token)["kid"] == old_kid
    _, first_response = published(live_server.url)

    new_key = keystore.rotate(immediate=True)
    db.session.commit()
    new_kid = new_key.kid
    assert new_kid != old_kid

    after = issue(live_server.url, scope="openid profile")
    assert jwt_header(after.id_token)["kid"] == new_kid
    refreshed = before.rp.refresh(before.refresh_token)
    assert jwt_header(refreshed.json()["id_token"])["kid"] == new_kid  # a refresh signs with the new key too

    key_set, response = published(live_server.url)
    assert {k.kid for k in key_set.keys} >= {old_kid, new_kid}
    assert response.headers["ETag"] != first_response.headers["ETag"]
    cache_control = response.headers["Cache-Control"]
    assert cache_control.startswith("public, max-age=")
    assert 0 < int(cache_control.split("max-age=")[1]) <= 3600  # modest: relying parties see a rotation soon
    assert verifies(before.id_token, key_set)
    assert verifies(after.id_token, key_set)
    # The end-session endpoint verifies hints from the same published set.
    assert (
        requests.get(
            live_server(END_SESSION), params={"id_token_hint": before.id_token}, allow_redirects=False, timeout=30
        ).status_code
        == 200
    )

    # Once the retired key's tokens have all expired, it leaves the key set: its tokens no longer verify.
    db.session.remove()
    old = db.session.get(SigningKey, old_kid)
    assert old.retired_at is not None and old.expires_at is not None
    old.expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    keystore.invalidate()

    key_set, _ = published(live_server.url)
    assert old_kid not in {k.kid for k in key_set.keys}
    assert not verifies(before.id_token, key_set)
    assert verifies(after.id_token, key_set)
    assert (
        requests.get(
            live_server(END_SESSION), params={"id_token_hint": before.id_token}, allow_redirects=False, timeout=30
        ).status_code
        == 400
    )


def test_a_scheduled_rotation_publishes_before_it_signs(live_server):
    current = keystore.snapshot().signing_kid
    upcoming = keystore.rotate().kid  # default: starts signing after KEY_PUBLISH_DELAY
    db.session.commit()
    try:
        key_set, _ = published(live_server.url)
        assert upcoming in {k.kid for k in key_set.keys}  # relying parties can cache it already
        issued = issue(live_server.url, scope="openid")
        assert jwt_header(issued.id_token)["kid"] == current  # still signed by the current key
    finally:
        # Bring the scheduled key in now so later tests sign with a key that is not retiring.
        db.session.remove()
        now = utcnow()
        row = db.session.get(SigningKey, upcoming)
        row.activates_at = now
        old = db.session.get(SigningKey, current)
        old.retired_at = now
        old.expires_at = now + timedelta(hours=1)
        db.session.commit()
        keystore.invalidate()
    assert keystore.snapshot().signing_kid == upcoming


@pytest.fixture(autouse=True)
def _fresh_keystore():
    keystore.invalidate()
    yield
    keystore.invalidate()
