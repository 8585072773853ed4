"""Rows the tests need, made through the same services the CLI and console use."""

from __future__ import annotations

import secrets

from sqlalchemy import text

from app.core.extensions import db
from app.models import Client, User
from app.services.members import create_member
from app.services.registration import NewClient, register_client

REDIRECT_URI = "http://127.0.0.1:7199/cb"
PASSWORD = "correct horse battery staple"


def make_member(
    tier: str = "basic", email: str | None = None, password: str = PASSWORD, verified: bool = True, **kw
) -> User:
    """A member whose address counts as verified (as after following the mailed link), unless
    `verified=False`."""
    email = email or f"member-{secrets.token_hex(4)}@example.test"
    user = create_member(email, kw.pop("name", "Test Member"), password, tier=tier, email_verified=verified, **kw)
    db.session.commit()  # the console and the CLI commit the member with its audit row; here, alone
    return user


def make_client(public: bool = False, redirect_uris: list[str] | None = None, **kw) -> tuple[Client, str | None]:
    spec = NewClient(
        name=kw.pop("name", "Test App"), redirect_uris=redirect_uris or [REDIRECT_URI], public=public, **kw
    )
    registered, secret = register_client(spec)
    db.session.commit()  # the console and the CLI commit the app with its audit row; here, alone
    # The service hands back a frozen record; the tests get the row as the ORM model, to change at will.
    return db.session.get(Client, registered.id), secret


def db_state() -> dict[str, list[tuple]]:
    """Every row of every table, for 'a rejected request changed nothing' assertions."""
    db.session.remove()
    state = {}
    with db.engine.connect() as conn:
        for table in db.metadata.sorted_tables:
            rows = conn.execute(text(f'SELECT * FROM "{table.name}"')).fetchall()
            state[table.name] = sorted(tuple(str(v) for v in row) for row in rows)
    return state
