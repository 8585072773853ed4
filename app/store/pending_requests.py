"""Pending sign-in requests (interactions): an authorization request parked while the member signs
in or answers the consent page; the browser holds only its random reference."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import CTE, and_, bindparam, select

from app.core.scopes import scope_list
from app.models import AuditEvent, AuthorizationCode, Client, Consent, Interaction, LoginSession
from app.models.base import utcnow
from app.store.apps import APP_COLUMNS, App, app_from
from app.store.consents import remember_consent
from app.store.logins import Login, beside, login_from, login_params
from app.store.statements import first

_interactions, _clients, _consents = Interaction.__table__, Client.__table__, Consent.__table__
_EVENT, _CODE = AuditEvent.__table__.insert(), AuthorizationCode.__table__.insert()
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
# `uid` and `now`; app/store/postgresql.py answers a request in one statement that begins with it).
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
    app: App
    # The scopes the signed-in member had already granted the app, read with the login
    # (`find_with_login`; empty when none); None when not read.
    remembered: tuple[str, ...] | None = None

    @property
    def client(self) -> App:
        """The app the request is for (Authlib's name for it)."""
        return self.app

    def is_open(self, now: datetime | None = None) -> bool:
        return self.consumed_at is None and (now or utcnow()) < self.expires_at

    def with_login(self, login_pk: int, user_id: str) -> PendingRequest:
        """The request as it reads once the login `login_pk` of member `user_id` was attached to it
        (the logins store's `start` writes that, with the login)."""
        return replace(self, login_session_id=login_pk, user_id=user_id)


def _request_from(row: Any, app: App, remembered: tuple[str, ...] | None = None) -> PendingRequest:
    return PendingRequest(
        row.id,
        row.client_id,
        row.params,
        row.browser_hash,
        row.login_session_id,
        row.user_id,
        row.expires_at,
        row.consumed_at,
        app,
        remembered,
    )


class SqlPendingRequests:
    """Pending requests, in SQL: an answer is four statements; PostgreSQL's is one
    (app/store/postgresql.py)."""

    def __init__(self, apps: Any) -> None:
        self._apps = apps  # the Apps store: an app read with its request is kept for the request

    def park(self, uid: str, values: dict[str, Any], app: App) -> PendingRequest:
        """Store a validated request for `app` under the random reference `uid` (`values`: the columns)."""
        row = {"id": uid, "created_at": utcnow(), "login_session_id": None, "consumed_at": None, **values}
        first(_INSERT, row)
        return PendingRequest(
            uid, app.id, row["params"], row["browser_hash"], None, row.get("user_id"), row["expires_at"], None, app
        )

    def find(self, uid: str) -> PendingRequest | None:
        row = first(_BY_ID, {"uid": uid})
        return None if row is None else _request_from(row, self._kept(row))

    def find_with_login(self, uid: str, session_id: str | None) -> tuple[PendingRequest | None, Login | None]:
        """The request `uid` with its app, and the live login of the cookie's `session_id` (None when
        there is none), in one query: the consent page needs all three."""
        row = first(_BY_ID_WITH_LOGIN, {"uid": uid, **login_params(session_id)})
        if row is None:
            return None, None
        login = login_from(row)
        remembered = tuple(scope_list(row.remembered_scope)) if login is not None else None
        return _request_from(row, self._kept(row), remembered), login

    def _kept(self, row: Any) -> App:
        """The app read beside the request, kept for the request: the pages and the protocol ask
        for it next."""
        app = app_from(row)
        self._apps.remember(app)
        return app

    def consume(self, uid: str) -> bool:
        """Mark the request answered; True for exactly one caller, and only while it is open."""
        return first(_CONSUME_ONCE, {"uid": uid, "now": utcnow()}) is not None

    def answer(self, uid: str, consent: dict[str, Any], event: dict[str, Any], code: dict[str, Any]) -> bool:
        """The member allowed the pending request `uid`: consume it (its single-use mark) and, only
        if this caller did, remember the consent (`consent`: its row), write its audit line
        (`event`: audit.event_row) and store the authorization code (`code`: its row, drawn by
        grants.draw_code). True when this caller consumed the request; nothing is written
        otherwise. One consent row per member and app even under concurrent answers: an upsert,
        never check-then-insert."""
        if not self.consume(uid):
            return False
        remember_consent(consent)
        first(_EVENT, event)
        first(_CODE, code)
        return True
