from argon2 import PasswordHasher

from app.core.extensions import db
from app.services.passwords import passwords
from tests.factories import PASSWORD, make_member


def test_passwords_are_argon2id_and_verify():
    member = make_member()
    assert member.password_hash.startswith("$argon2id$")
    assert PASSWORD not in member.password_hash
    assert passwords.verify(member, PASSWORD)
    assert not passwords.verify(member, PASSWORD + "!")


def test_unknown_member_never_verifies():
    assert passwords.verify(None, PASSWORD) is False


def test_hash_is_upgraded_on_login_when_the_cost_changes():
    member = make_member()
    weak = PasswordHasher(time_cost=1, memory_cost=512, parallelism=1).hash(PASSWORD)
    member.password_hash = weak
    db.session.commit()
    assert passwords.verify(member, PASSWORD)
    assert member.password_hash != weak
    assert "m=1024" in member.password_hash  # the configured (test) cost
