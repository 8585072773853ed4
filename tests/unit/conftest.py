"""Fixtures shared by the unit tests."""

import pytest

from app.core.extensions import db
from app.models import SigningKey
from app.protocol.jwks import keystore


@pytest.fixture
def fresh_keys(app):
    """For tests that change the key table (signing keys outlive each test): start from one key
    and restore a single key after."""
    SigningKey.query.delete()
    db.session.commit()
    keystore.invalidate()
    first = keystore.generate()
    db.session.commit()
    yield first
    SigningKey.query.delete()
    db.session.commit()
    keystore.invalidate()
    keystore.generate()
    db.session.commit()
