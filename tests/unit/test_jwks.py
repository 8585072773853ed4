import json
import os
import stat
from datetime import timedelta

import pytest
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError
from joserfc.jwk import KeySet
from sqlalchemy import event

from app.core.extensions import db
from app.models import AuditEvent, SigningKey
from app.models.base import utcnow
from app.protocol.jwks import KeyStoreError, keystore


def test_private_key_file_is_0600_and_kid_is_the_thumbprint(fresh_keys, app):
    path = os.path.join(app.config["KEYS_DIR"], f"{fresh_keys.kid}.pem")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(app.config["KEYS_DIR"]).st_mode) == 0o700
    jwk = fresh_keys.public_jwk
    assert jwk["kty"] == "RSA" and jwk["alg"] == "RS256" and jwk["use"] == "sig" and jwk["kid"] == fresh_keys.kid
    assert not {"d", "p", "q", "dp", "dq", "qi"} & jwk.keys()
    assert len(jwk["n"]) >= 342  # base64url of a 2048-bit modulus


def test_published_set_holds_public_parts_only(fresh_keys):
    body = json.loads(keystore.snapshot().jwks_body)
    assert [k["kid"] for k in body["keys"]] == [fresh_keys.kid]
    assert all("d" not in k for k in body["keys"])


def test_rotation_publishes_before_signing(fresh_keys):
    new = keystore.rotate(immediate=False)
    kids = {k["kid"] for k in keystore.public_key_set()["keys"]}
    assert kids == {fresh_keys.kid, new.kid}
    assert keystore.signing_key()[0] == fresh_keys.kid  # the new key is "next" until the delay passes
    states = {k["kid"]: k["state"] for k in keystore.describe()}
    assert states == {fresh_keys.kid: "active", new.kid: "next"}


def test_immediate_rotation_signs_with_the_new_key_and_keeps_the_old_published(fresh_keys):
    kid_a, key_a = keystore.signing_key()
    token_a = jwt.encode({"alg": "RS256", "kid": kid_a}, {"sub": "x"}, key_a)
    new = keystore.rotate(immediate=True)
    assert keystore.signing_key()[0] == new.kid
    published = KeySet.import_key_set(keystore.public_key_set())
    assert jwt.decode(token_a, published).claims["sub"] == "x"  # A's tokens still verify
    old = db.session.get(SigningKey, kid_a)
    assert old.expires_at - old.retired_at == timedelta(seconds=keystore.token_lifetime)


def test_retired_key_leaves_the_set_once_its_tokens_expired(fresh_keys):
    keystore.rotate(immediate=True)
    old = db.session.get(SigningKey, fresh_keys.kid)
    old.expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    keystore.invalidate()
    assert fresh_keys.kid not in {k["kid"] for k in keystore.public_key_set()["keys"]}


def test_the_only_signing_key_cannot_be_retired(fresh_keys):
    with pytest.raises(KeyStoreError, match="only signing key"):
        keystore.retire(fresh_keys.kid)


def test_missing_private_file_is_a_clear_error_and_the_way_out_still_works(fresh_keys, app):
    """Only signing fails: the key set is still served, and the documented recovery (list,
    rotate --now, revoke the lost key) works without editing the database."""
    os.remove(os.path.join(app.config["KEYS_DIR"], f"{fresh_keys.kid}.pem"))
    keystore._private.clear()
    keystore.invalidate()
    with pytest.raises(KeyStoreError, match="missing"):
        keystore.signing_key()
    assert [k["kid"] for k in keystore.public_key_set()["keys"]] == [fresh_keys.kid]
    [listed] = keystore.describe()
    assert listed["state"] == "active" and listed["private_key_present"] is False
    new = keystore.rotate(immediate=True)
    assert keystore.signing_key()[0] == new.kid
    keystore.revoke(fresh_keys.kid)
    assert [k["kid"] for k in keystore.public_key_set()["keys"]] == [new.kid]


def test_revoking_a_leaked_key_unpublishes_it_at_once(fresh_keys):
    """retire keeps a key published until the tokens it signed expire; revoke (a leak) does not:
    tokens signed with it, real or forged, stop verifying now."""
    kid_a, key_a = keystore.signing_key()
    forged = jwt.encode({"alg": "RS256", "kid": kid_a}, {"sub": "anyone"}, key_a)
    with pytest.raises(KeyStoreError, match="only signing key"):
        keystore.revoke(kid_a)
    keystore.rotate(immediate=True)
    keystore.revoke(kid_a)
    published = keystore.public_key_set()["keys"]
    assert kid_a not in {k["kid"] for k in published}
    with pytest.raises(InvalidKeyIdError):  # no key in the published set has this kid
        jwt.decode(forged, KeySet.import_key_set({"keys": published}))
    [event] = db.session.scalars(db.select(AuditEvent).where(AuditEvent.action == "key.revoked")).all()
    assert event.detail == {"kid": kid_a}


def test_ending_a_key_that_still_waits_keeps_the_current_key_signing(fresh_keys):
    """A scheduled rotation sets the current key to retire when the new one starts. Revoking (or
    retiring) the new one before then must give the current key its job back, or nothing would
    sign once the start time passed."""
    waiting = keystore.rotate(immediate=False)
    keystore.revoke(waiting.kid)
    current = db.session.get(SigningKey, fresh_keys.kid)
    later = utcnow() + timedelta(seconds=keystore.publish_delay + 1)
    assert current.retired_at is None and current.can_sign(later)
    assert keystore.signing_key()[0] == fresh_keys.kid
    again = keystore.rotate(immediate=False)  # the ended key is no rotation under way
    assert {k["kid"]: k["state"] for k in keystore.describe()}[again.kid] == "next"


def test_a_second_rotation_waits_for_the_first_unless_it_is_an_emergency(fresh_keys):
    waiting = keystore.rotate(immediate=False)
    with pytest.raises(KeyStoreError, match="already under way"):
        keystore.rotate(immediate=False)
    emergency = keystore.rotate(immediate=True)
    assert keystore.signing_key()[0] == emergency.kid
    # The waiting key is withdrawn: it never takes over from the emergency key, and leaves the set.
    row = db.session.get(SigningKey, waiting.kid)
    assert row.retired_at <= row.activates_at and not row.is_published(utcnow())
    assert waiting.kid not in {k["kid"] for k in keystore.public_key_set()["keys"]}
    states = {k["kid"]: k["state"] for k in keystore.describe()}
    assert states[emergency.kid] == "active" and states[waiting.kid] == "retired"  # not "next": nothing waits
    keystore.rotate(immediate=False)  # so a scheduled rotation may start again at once


def test_keys_are_loaded_once_not_per_request(fresh_keys):
    keystore.refresh_interval = 3600
    try:
        keystore.invalidate()
        keystore.signing_key()
        statements = []
        listener = lambda *args, **kw: statements.append(args[2])  # noqa: E731
        event.listen(db.engine, "before_cursor_execute", listener)
        try:
            for _ in range(50):
                keystore.signing_key()
                keystore.snapshot()
        finally:
            event.remove(db.engine, "before_cursor_execute", listener)
        assert statements == []
    finally:
        keystore.refresh_interval = 0


def test_a_rotation_is_one_transaction(fresh_keys, monkeypatch):
    """The new key, the old one's retirement and the audit row commit together: a failure on the
    way leaves the key set as it was (the new key was once committed on its own, first)."""
    before = {(row.kid, row.retired_at) for row in db.session.scalars(db.select(SigningKey))}

    def fail(*args, **kwargs):
        raise RuntimeError("the audit trail is unreachable")

    monkeypatch.setattr("app.protocol.jwks.record", fail)
    with pytest.raises(RuntimeError):
        keystore.rotate(immediate=True)
    db.session.rollback()
    assert {(row.kid, row.retired_at) for row in db.session.scalars(db.select(SigningKey))} == before
