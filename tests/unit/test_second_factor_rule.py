"""Whether sign-in asks for a second factor, read two ways: on its own (`has_second_factor`: the
account page, the authorization endpoint's acr_values) and with the member the login page looks
up by address (`member_signing_in`, one query). Both read the one rule (`asks_second_factor`), and
must agree in every state a member's factors can be in."""

from __future__ import annotations

import pyotp
import pytest

from app.core.extensions import db
from app.models import Passkey
from app.services.second_factor import begin_totp, confirm_totp, has_second_factor, member_signing_in
from tests.factories import make_member


def nothing(user):
    pass


def an_unconfirmed_authenticator_app(user):
    begin_totp(user)


def an_authenticator_app(user):
    assert confirm_totp(user, pyotp.TOTP(begin_totp(user)).now()) is not None


def a_passkey(user):
    db.session.add(Passkey(user_id=user.id, credential_id=f"cred-{user.id}", public_key=b"cose", name="Laptop"))


@pytest.mark.parametrize(
    ("factors", "asked"),
    [(nothing, False), (an_unconfirmed_authenticator_app, False), (an_authenticator_app, True), (a_passkey, True)],
)
def test_the_login_pages_one_query_agrees_with_the_rule(app, factors, asked):
    user = make_member(email=f"{factors.__name__}@Example.test")
    factors(user)
    db.session.commit()
    found, asks = member_signing_in(f"  {factors.__name__.upper()}@example.TEST ")
    assert found is not None and found.id == user.id
    assert asks is asked and has_second_factor(user) is asked


def test_an_unknown_address_finds_no_member_and_asks_nothing(app):
    assert member_signing_in("nobody@example.test") == (None, False)
    assert member_signing_in(None) == (None, False)


def test_the_login_pages_member_carries_the_hash_but_never_prints_it(app):
    """The record the login page checks the password against holds the stored hash (and whether
    the member is suspended), and its repr, which a log line or a traceback may show, leaves it out."""
    user = make_member(email="printed@example.test")
    db.session.commit()
    found, _ = member_signing_in("printed@example.test")
    assert found is not None and found.password_hash == user.password_hash
    assert found.is_suspended is False and found.sub == user.sub and found.tier == user.tier
    assert user.password_hash not in repr(found) and "password_hash" not in repr(found)
