"""Consent decisions: what a member already granted, what is missing, recording a grant, and
revoking one. Reading and recording run on the request's unit of work (app/store/database.py), as the
protocol store does; revoking takes the caller's session."""

from __future__ import annotations

from functools import partial
from typing import Any, TypedDict

from sqlalchemy import Insert, Select, bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.core.scopes import SCOPES, grantable, join, scope_list, tier_allows
from app.models import AuthorizationCode, Consent, User
from app.models.base import utcnow
from app.services.audit import EVENTS, write_event
from app.store import codes, interactions
from app.store.clients import App
from app.store.members import Member
from app.store.statements import first, on_postgresql, prefixed, rows_for_each
from app.store.tokens import end_grants, narrow_live_tokens


class Withdrawn(TypedDict):
    """What a downgrade took back: audited as the event's detail."""

    consents_narrowed: int
    tokens_narrowed: int


# Built once: every authorization request asks (SQLAlchemy then computes its cache key once).
# The scope column alone, from the table rather than the mapped class: the row itself is never
# edited here (answer_request upserts), and a select of a mapped attribute runs through the ORM's
# loading machinery, about 20 µs more per sign-in than the same SELECT in Core (measured in-process).
_consents, _codes = Consent.__table__, AuthorizationCode.__table__
_CONSENTED = select(_consents.c.scope).where(
    _consents.c.user_id == bindparam("user_id"), _consents.c.client_id == bindparam("client_id")
)


def remembered_scopes(user: User | Member, client: App) -> list[str]:
    row = first(_CONSENTED, {"user_id": user.id, "client_id": client.id})
    return scope_list(row.scope) if row is not None else []


def missing_scopes(requested: list[str], remembered: list[str]) -> list[str]:
    """What the member has not granted yet; empty means a remembered consent covers the request."""
    have = set(remembered)
    return [s for s in requested if s not in have]


def decide_granted(requested: list[str], ticked: list[str] | None, tier: str) -> list[str]:
    """The scopes a consent grants: those requested that the member kept ticked (mandatory
    ones always) and that the membership includes."""
    keep = set(ticked) if ticked is not None else set(requested)
    chosen = [s for s in requested if not SCOPES[s].optional or s in keep]
    return grantable(chosen, tier)


def consented_scope(remembered: list[str] | tuple[str, ...], asked: list[str], granted: list[str]) -> str:
    """The consent to remember after the member's latest answer: for each scope the page `asked`
    about, whether it was granted now (an unticked scope granted before is taken back), and the
    earlier grants (`remembered`) of scopes not asked about this time; in the scope table's order,
    as shown."""
    chosen = {s for s in remembered if s not in asked} | set(granted)
    return join(s for s in SCOPES if s in chosen)


def answer_request(
    request_id: str,
    user: User | Member,
    client: App,
    scope: str,
    event: dict[str, Any],
    code: dict[str, Any],
) -> bool:
    """The member allowed the pending request `request_id`: consume it (its single-use mark) and,
    only if this caller did, remember the consent (`scope`: `consented_scope`), write its audit
    line (`event`: audit.event_row) and store the authorization code (`code`: its row, drawn by
    grants.draw_code). True when this caller consumed the request; nothing is written otherwise.
    One row per member and app even under concurrent consents: an INSERT ... ON CONFLICT, never
    check-then-insert.

    On PostgreSQL this is one statement (data-modifying CTEs): the UPDATE that consumes, with the
    three INSERTs selecting from its RETURNING, so they write a row only when it matched; it stands
    for four statements and round trips (the consent page's query now reads the remembered
    consent, which was a fifth), still in the request's transaction. SQLite has no UPDATE inside
    WITH: there the UPDATE, then the INSERTs."""
    now = utcnow()
    consent = {"user_id": user.id, "client_id": client.id, "scope": scope, "granted_at": now, "updated_at": now}
    if on_postgresql():
        params = {"uid": request_id, "now": now}
        params |= prefixed("consent_", consent) | prefixed("event_", event) | prefixed("code_", code)
        answered = first(_ANSWERED_IN_ONE, params)  # the count of requests it consumed: 1 or 0
        return answered is not None and answered[0] == 1
    if not interactions.consume(request_id):
        return False
    first(_UPSERT_ON_SQLITE, consent)
    write_event(event)
    codes.store_code(code)
    return True


def _sqlite_upsert() -> Insert:
    """The consent upsert on SQLite (PostgreSQL's is part of `answer_request`'s one statement)."""
    insert = sqlite.insert(_consents).values(
        user_id=bindparam("user_id"),
        client_id=bindparam("client_id"),
        scope=bindparam("scope"),
        granted_at=bindparam("granted_at"),
        updated_at=bindparam("updated_at"),
    )
    return insert.on_conflict_do_update(
        index_elements=["user_id", "client_id"],
        set_={"scope": insert.excluded.scope, "updated_at": insert.excluded.updated_at},
    )


# Built once: building a statement and its cache key cost more than running it.
_UPSERT_ON_SQLITE = _sqlite_upsert()


def _answered_in_one() -> Select[Any]:
    """`answer_request`'s PostgreSQL statement."""
    consumed = interactions.CONSUMED
    consent_columns = ["user_id", "client_id", "scope", "granted_at", "updated_at"]
    remembered = postgresql.insert(_consents).from_select(
        consent_columns, rows_for_each(consumed, _consents, consent_columns, "consent_")
    )
    remembered = remembered.on_conflict_do_update(
        index_elements=["user_id", "client_id"],
        set_={"scope": remembered.excluded.scope, "updated_at": remembered.excluded.updated_at},
    )
    event_columns = [c.name for c in EVENTS.columns if c.name != "id"]
    logged = EVENTS.insert().from_select(event_columns, rows_for_each(consumed, EVENTS, event_columns, "event_"))
    code_columns = [c.name for c in _codes.columns if c.name not in ("id", "used_at")]  # a new code
    issued = _codes.insert().from_select(code_columns, rows_for_each(consumed, _codes, code_columns, "code_"))
    return (
        select(func.count())
        .select_from(consumed)
        .add_cte(remembered.cte("remembered"), logged.cte("logged"), issued.cte("issued"))
    )


_ANSWERED_IN_ONE = _answered_in_one()


def revoke_consent(db_session: Session, user: User, client: App | None) -> int:
    """Forget the consent and end everything it allowed, at once: the app's tokens for the member,
    its codes not yet redeemed and the member's pending requests to it; every app's when `client`
    is None. Returns the tokens revoked; the caller commits."""
    which = Consent.user_id == user.id
    if client is not None:
        which &= Consent.client_id == client.id
    db_session.execute(delete(Consent).where(which))
    return end_grants(user_id=user.id, client_id=client.id if client is not None else None)


def withdraw_beyond_tier(db_session: Session, user: User) -> Withdrawn:
    """After a downgrade: take the scopes the new membership lacks out of the member's consents and
    live tokens. Reach is checked on every request anyway; this makes the loss stick, so that an
    upgrade later asks the member again instead of reviving an old grant. The caller commits."""
    keep = partial(grantable, tier=user.tier)
    consents = 0
    for row in db_session.scalars(select(Consent).where(Consent.user_id == user.id)):
        narrowed = join(keep(scope_list(row.scope)))
        if narrowed != row.scope:
            row.scope = narrowed
            consents += 1
    return {"consents_narrowed": consents, "tokens_narrowed": narrow_live_tokens(user.id, keep)}


def describe(scopes: list[str], tier: str) -> list[dict[str, Any]]:
    """The consent page's lines: plain words per scope, and whether the plan includes it."""
    return [
        {
            "name": s,
            "description": SCOPES[s].description,
            "optional": SCOPES[s].optional,
            "included": tier_allows(s, tier),
        }
        for s in scopes
        if s in SCOPES
    ]
