"""Login sessions: the provider's own sign-in, found by the hash of the cookie's random id."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, and_, bindparam, select

from app.models import AuditEvent, Interaction, LoginSession, User
from app.models.base import sha256_hex, utcnow
from app.store.members import Member, member_from, member_joined
from app.store.statements import first, run

_sessions, _users = LoginSession.__table__, User.__table__
_events, _requests = AuditEvent.__table__, Interaction.__table__
_INSERT = _sessions.insert().returning(_sessions.c.id)
_EVENT = (
    _events.insert()
)  # a sign-in's audit line, as app.services.audit.event_row makes it (the store stands on the models)
_ATTACH = (
    _requests.update()
    .where(_requests.c.id == bindparam("request_id"))
    .values(login_session_id=bindparam("pk"), user_id=bindparam("member"))
)

# Only a live session of a member who is not suspended counts: the rule is in the query, so an
# ended, expired or suspended member's session is simply not found.
_LOGIN_COLUMNS = (
    _sessions.c.id.label("login_id"),
    _sessions.c.user_id.label("login_user_id"),
    _sessions.c.auth_time,
    _sessions.c.expires_at.label("login_expires_at"),
    _sessions.c.amr,
    _sessions.c.last_seen_at,
    *member_joined(),
)
_LIVE = (
    _sessions.c.session_hash == bindparam("session_hash"),
    _sessions.c.ended_at.is_(None),
    _sessions.c.expires_at > bindparam("now"),
)
_OF_MEMBER_NOT_SUSPENDED = and_(_users.c.id == _sessions.c.user_id, _users.c.suspended_at.is_(None))
_LIVE_BY_HASH = select(*_LOGIN_COLUMNS).join_from(_sessions, _users, _OF_MEMBER_NOT_SUSPENDED).where(*_LIVE)


def beside(table: Table, statement: Select[Any]) -> Select[Any]:
    """`statement` (which selects from `table`) with the live login of the cookie's session id
    beside its row, or NULLs where there is none: one query for a page that needs both. Bind
    `session_hash` (`login_params`) and `now`."""
    return (
        statement.add_columns(*_LOGIN_COLUMNS)
        .outerjoin_from(table, _sessions, and_(*_LIVE))
        .outerjoin(_users, _OF_MEMBER_NOT_SUSPENDED)
    )


def login_params(session_id: str | None) -> dict[str, Any]:
    """The parameters of `_LIVE_BY_HASH` or `beside` for the cookie's session id (none: no match)."""
    return {"session_hash": sha256_hex(session_id) if session_id else "", "now": utcnow()}


def login_from(row: Any) -> Login | None:
    """The Login of a row selected with `_LOGIN_COLUMNS` (alone, or `beside` another row)."""
    if row.login_id is None or row.member_sub is None:  # no session, or its member is suspended
        return None
    member = member_from(row, row.login_user_id)
    return Login(row.login_id, member.id, row.auth_time, row.login_expires_at, row.amr, row.last_seen_at, member)


_END = (
    _sessions.update()
    .where(_sessions.c.id == bindparam("pk"), _sessions.c.ended_at.is_(None))
    .values(ended_at=bindparam("now"))
)
_TOUCH = _sessions.update().where(_sessions.c.id == bindparam("pk")).values(last_seen_at=bindparam("now"))


@dataclass(frozen=True, slots=True)
class Login:
    """A live login session, read-only: who signed in, when, and how (RFC 8176 `amr`)."""

    id: int
    user_id: str
    auth_time: datetime
    expires_at: datetime
    amr: str
    last_seen_at: datetime | None
    user: Member


def login_row(session_id: str, member: Member, values: dict[str, Any]) -> dict[str, Any]:
    """The columns of a new login session (its id as a hash only)."""
    return {"session_hash": sha256_hex(session_id), "user_id": member.id, "last_seen_at": values["auth_time"], **values}


def started(pk: int, member: Member, values: dict[str, Any]) -> Login:
    """The Login a start stored under row id `pk`."""
    return Login(pk, member.id, values["auth_time"], values["expires_at"], values["amr"], values["auth_time"], member)


class SqlLogins:
    """Login sessions, in SQL: a start is three statements; PostgreSQL's is one (app/store/postgresql.py)."""

    def live(self, session_id: str) -> Login | None:
        """The live session whose cookie carries `session_id`, with its member."""
        row = first(_LIVE_BY_HASH, login_params(session_id))
        return None if row is None else login_from(row)

    def start(
        self,
        session_id: str,
        member: Member,
        values: dict[str, Any],
        event: dict[str, Any] | None = None,
        attach_to: str | None = None,
    ) -> Login:
        """Store a new session for `member` (`values`: auth_time, expires_at, amr, ip, user_agent),
        with its audit line (`event`: audit.event_row) and, when the member signed in for a pending
        request (`attach_to`: its id), the login attached to that request: it satisfies `prompt=login`
        and `max_age`, and a disconnect of the app closes the request. Three statements here; one on
        PostgreSQL (app/store/postgresql.py)."""
        row = login_row(session_id, member, values)
        inserted = first(_INSERT, row)
        assert inserted is not None  # RETURNING's row, always one
        pk = inserted[0]
        if event is not None:
            first(_EVENT, event)
        if attach_to is not None:
            first(_ATTACH, {"request_id": attach_to, "pk": pk, "member": member.id})
        return started(int(pk), member, values)

    def end(self, pk: int) -> bool:
        """End one session on the server; False when it had ended already."""
        result = run(_END, {"pk": pk, "now": utcnow()})
        return bool(result.rowcount)

    def end_all_of(self, user_id: str, only: int | None = None) -> int:
        """End every live session of a member (sign out everywhere, a new password, a suspension), or
        just session `only` of theirs (the account page's list). Returns how many ended."""
        statement = _sessions.update().where(_sessions.c.user_id == user_id, _sessions.c.ended_at.is_(None))
        if only is not None:
            statement = statement.where(_sessions.c.id == only)
        result = run(statement.values(ended_at=utcnow()))
        return int(result.rowcount)

    def note_seen(self, pk: int, when: datetime) -> None:
        """The session was used (an app sign-in, the account page)."""
        run(_TOUCH, {"pk": pk, "now": when})

    def live_of(self, user_id: str) -> list[SessionSeen]:
        """Every live session of a member (the account page's list)."""
        rows = run(_LIVE_OF_MEMBER, {"user_id": user_id, "now": utcnow()}).all()
        return [SessionSeen(r.id, r.user_agent, r.ip, r.auth_time, r.last_seen_at) for r in rows]


@dataclass(frozen=True, slots=True)
class SessionSeen:
    """A live session as its member sees it listed: where and when."""

    id: int
    user_agent: str | None
    ip: str | None
    auth_time: datetime
    last_seen_at: datetime | None


_LIVE_OF_MEMBER = select(
    _sessions.c.id, _sessions.c.user_agent, _sessions.c.ip, _sessions.c.auth_time, _sessions.c.last_seen_at
).where(
    _sessions.c.user_id == bindparam("user_id"),
    _sessions.c.ended_at.is_(None),
    _sessions.c.expires_at > bindparam("now"),
)
