"""Passwords are rehashed at login when the argon2 parameters change (app/services/passwords.py): an
operator who raises ARGON2_* gets every member onto the new cost as they sign in, without a reset.
Over HTTP through the real login page of the live server."""

from __future__ import annotations

from argon2 import PasswordHasher, Type, extract_parameters
from sqlalchemy import text

from app.core.extensions import db
from tests.factories import PASSWORD, make_member
from tests.integration.console_support import signed_in

# Cheaper than any configuration the provider accepts, and than the test server's.
WEAK = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


def stored_hash(user_id: str) -> str:
    """users.password_hash as the database holds it now (a new session, nothing cached)."""
    db.session.remove()
    with db.engine.connect() as conn:
        return conn.execute(text("SELECT password_hash FROM users WHERE id = :id"), {"id": user_id}).scalar_one()


def configured(app) -> tuple[int, int, int]:
    return (
        int(app.config["ARGON2_TIME_COST"]),
        int(app.config["ARGON2_MEMORY_COST"]),
        int(app.config["ARGON2_PARALLELISM"]),
    )


def cost(hash_: str) -> tuple[int, int, int]:
    params = extract_parameters(hash_)
    return params.time_cost, params.memory_cost, params.parallelism


def test_a_weaker_hash_is_replaced_at_sign_in_with_the_configured_cost(live_server, app):
    """A member whose hash predates a cost increase signs in as usual; afterwards the database
    holds a hash at the configured cost, and the same password still works."""
    member = make_member()
    member_id, email = member.id, member.email
    weak = WEAK.hash(PASSWORD)
    assert cost(weak) != configured(app)  # the stored hash really is off the configured cost
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE users SET password_hash = :h WHERE id = :id"), {"h": weak, "id": member_id})
    assert stored_hash(member_id) == weak

    signed_in(live_server.url, email, "/account")

    upgraded = stored_hash(member_id)
    assert upgraded != weak
    assert extract_parameters(upgraded).type is Type.ID
    assert cost(upgraded) == configured(app)
    assert PasswordHasher().verify(upgraded, PASSWORD)  # the same password, under the new hash
    # The member signs in again with the same password, and the new hash is left as it is.
    signed_in(live_server.url, email, "/account")
    assert stored_hash(member_id) == upgraded
