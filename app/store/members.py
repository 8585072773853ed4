"""The member beside a protocol row: what ID-token claims, userinfo and tier rules need."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Label, Row, Table, select

from app.models import User

_users = User.__table__
MEMBER_COLUMNS = ("sub", "name", "email", "email_verified", "tier", "profile_id")


class MemberFacts(Protocol):
    """What a service reads of a member, whichever shape holds them: the store's `Member` record
    (the protocol's reads, one statement) or the ORM `User` a page is changing. One name for the
    one aggregate in every signature that only reads it."""

    @property
    def id(self) -> str: ...
    @property
    def sub(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def email_verified(self) -> bool: ...
    @property
    def tier(self) -> str: ...
    @property
    def profile_id(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Member:
    """A member as the protocol sees them (read-only): claims, tier, the data they own."""

    id: str
    sub: str
    name: str
    email: str
    email_verified: bool
    tier: str
    profile_id: str | None


@dataclass(frozen=True, slots=True)
class Account(Member):
    """A member as the login page meets them: with the hash their password is checked against
    and whether they are suspended (read-only; a rehash is written with its own statement)."""

    password_hash: str = field(repr=False)  # never in a log line or an error message
    suspended_at: datetime | None

    @property
    def is_suspended(self) -> bool:
        return self.suspended_at is not None


ACCOUNT_COLUMNS = ("id", *MEMBER_COLUMNS, "password_hash", "suspended_at")  # Account's fields, in order


def member_columns(table: Table) -> list[Label[Any]]:
    """The member's columns beside a row of `table`, as correlated subqueries labelled `member_*`:
    SQLite's RETURNING may name only the table it changes, and these let one statement find,
    spend and describe."""
    return [
        select(_users.c[name])
        .where(_users.c.id == table.c.user_id)
        .correlate(table)
        .scalar_subquery()
        .label(f"member_{name}")
        for name in MEMBER_COLUMNS
    ]


def member_joined() -> list[Any]:
    """The member's columns, labelled `member_*`, for a statement that joins the users table."""
    return [_users.c[name].label(f"member_{name}") for name in MEMBER_COLUMNS]


def member_from(row: Row[Any], member_id: str | None = None) -> Member:
    """The Member of a row selected with `member_columns` or `member_joined`, whose id is the row's
    `user_id` unless given."""
    return Member(member_id or row.user_id, *(getattr(row, f"member_{name}") for name in MEMBER_COLUMNS))
