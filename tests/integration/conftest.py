"""Shared pieces of the HTTP tests: a member, a confidential and a public app, their RPs."""

import pytest

from app.core.extensions import db
from app.models import SigningKey
from app.protocol.jwks import keystore
from tests.factories import make_client, make_member
from tests.flows import RelyingParty


@pytest.fixture
def member():
    return make_member(tier="basic", name="Bea Basic")


@pytest.fixture
def pro_member():
    return make_member(tier="pro", name="Pat Pro")


@pytest.fixture
def rp(live_server):
    client, secret = make_client()
    return RelyingParty(live_server.url, client.client_id, secret)


@pytest.fixture
def public_rp(live_server):
    client, _ = make_client(public=True)
    return RelyingParty(live_server.url, client.client_id, None)


@pytest.fixture
def restore_keys():
    """Key rows outlive a test (the server signs with them): put them back as they were."""
    db.session.expire_all()
    saved = {k.kid: (k.activates_at, k.retired_at, k.expires_at) for k in db.session.scalars(db.select(SigningKey))}
    yield
    db.session.rollback()
    for row in db.session.scalars(db.select(SigningKey)).all():
        if row.kid in saved:
            row.activates_at, row.retired_at, row.expires_at = saved[row.kid]
        else:
            db.session.delete(row)
    db.session.commit()
    keystore.invalidate()
