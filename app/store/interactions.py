"""Pending sign-in requests (interactions): an authorization request parked while the member signs
in or answers the consent page; the browser holds only its random reference."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import CTE, and_, bindparam, select

from app.core.scopes import scope_list
from app.models import Client, Consent, Interaction, LoginSession
from app.models.base import utcnow
from app.store.clients import APP_COLUMNS, App, app_by_id, app_from
from app.store.sessions import Login, beside, login_from, login_params
from app.store.statements import first

_interactions, _clients, _consents = Interaction.__table__, Client.__table__, Consent.__table__
_INSERT = _interactions.insert()
# The request with its app in one query: every page of the sign-in flow names the app.
_BY_ID = (
    select(
        _interactions.c.id,
        _interactions.c.client_id,
        _interactions.c.params,
        _interactions.c.browser_hash,
        _interactions.c.login_session_id,
        _interactions.c.user_id,
        _interactions.c.expires_at,
        _interactions.c.consumed_at,
        *APP_COLUMNS,
    )
    .join_from(_interactions, _clients, _clients.c.id == _interactions.c.client_id)
    .where(_interactions.c.id == bindparam("uid"))
)
# The consent page's query: the request, its app, the browser's live login, and what that member
# had already granted the app (its answer merges with it: `remembered`).
_BY_ID_WITH_LOGIN = (
    beside(_interactions, _BY_ID)
    .add_columns(_consents.c.scope.label("remembered_scope"))
    .outerjoin(
        _consents,
        and_(
            _consents.c.user_id == LoginSession.__table__.c.user_id, _consents.c.client_id == _interactions.c.client_id
        ),
    )
)
# Consuming is the single-use mark: one UPDATE that only an open request matches.
_CONSUME = (
    _interactions.update()
    .where(
        _interactions.c.id == bindparam("uid"),
        _interactions.c.consumed_at.is_(None),
        _interactions.c.expires_at > bindparam("now"),
    )
    .values(consumed_at=bindparam("now"))
)
# The same mark as the first step of a statement that writes more only when it matched (binds
# `uid` and `now`; see app/services/consent.py).
_CONSUME_ONCE = _CONSUME.returning(_interactions.c.id)  # a row for the one caller that consumed it
CONSUMED: CTE = _CONSUME_ONCE.cte("consumed")


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A parked authorization request, read-only, with its app (read with it)."""

    id: str
    client_id: int  # the app's row id
    params: dict[str, Any]
    browser_hash: str
    login_session_id: int | None
    user_id: str | None
    expires_at: datetime
    consumed_at: datetime | None
    # The scopes the signed-in member had already granted the app, read with the login
    # (`find_with_login`; empty when none); None when not read.
    remembered: tuple[str, ...] | None = None

    def is_open(self, now: datetime | None = None) -> bool:
        return self.consumed_at is None and (now or utcnow()) < self.expires_at

    @property
    def client(self) -> App | None:
        """The app the request is for (None once it was deleted outright)."""
        return app_by_id(self.client_id)


def park(uid: str, values: dict[str, Any]) -> PendingRequest:
    """Store a validated request under the random reference `uid` (`values`: the columns)."""
    row = {"id": uid, "created_at": utcnow(), "login_session_id": None, "consumed_at": None, **values}
    first(_INSERT, row)
    return PendingRequest(
        uid,
        row["client_id"],
        row["params"],
        row["browser_hash"],
        None,
        row.get("user_id"),
        row["expires_at"],
        None,
    )


def find(uid: str) -> PendingRequest | None:
    row = first(_BY_ID, {"uid": uid})
    if row is None:
        return None
    app_from(row)  # kept for the request: the pages and the protocol ask for the app next
    return PendingRequest(*row[:8])


def find_with_login(uid: str, session_id: str | None) -> tuple[PendingRequest | None, Login | None]:
    """The request `uid` with its app, and the live login of the cookie's `session_id` (None when
    there is none), in one query: the consent page needs all three."""
    row = first(_BY_ID_WITH_LOGIN, {"uid": uid, **login_params(session_id)})
    if row is None:
        return None, None
    app_from(row)
    login = login_from(row)
    remembered = tuple(scope_list(row.remembered_scope)) if login is not None else None
    return PendingRequest(*row[:8], remembered), login  # type: ignore[call-arg]  # eight columns, then this


def with_login(request: PendingRequest, login_pk: int, user_id: str) -> PendingRequest:
    """`request` as it reads once the login `login_pk` of member `user_id` was attached to it (the
    sessions store's `start_login` writes that, with the login)."""
    return replace(request, login_session_id=login_pk, user_id=user_id)


def consume(uid: str) -> bool:
    """Mark the request answered; True for exactly one caller, and only while it is open."""
    return first(_CONSUME_ONCE, {"uid": uid, "now": utcnow()}) is not None
