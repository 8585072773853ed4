"""Remembered consents: which scopes a member granted to which app, one row per member and app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Insert, bindparam, select
from sqlalchemy.dialects import sqlite

from app.core.scopes import join, scope_list
from app.models import Consent
from app.store.statements import first, run

_consents = Consent.__table__
# Built once: every authorization request asks (SQLAlchemy then computes its cache key once).
_CONSENTED = select(_consents.c.scope).where(
    _consents.c.user_id == bindparam("user_id"), _consents.c.client_id == bindparam("client_id")
)


def _upsert() -> Insert:
    """A consent's row, inserted or its scope replaced: never check-then-insert. SQLite's spelling;
    PostgreSQL's upsert is part of the one statement that answers a request (app/store/postgresql.py)."""
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


_UPSERT = _upsert()


def remember_consent(row: dict[str, Any]) -> None:
    """Remember a consent (`row`: user_id, client_id, scope, granted_at, updated_at)."""
    first(_UPSERT, row)


class SqlConsents:
    """Consents, in SQL."""

    def remembered(self, user_id: str, client_pk: int) -> list[str]:
        """The scopes the member granted the app, in the scope table's order; none when none."""
        row = first(_CONSENTED, {"user_id": user_id, "client_id": client_pk})
        return scope_list(row.scope) if row is not None else []

    def forget(self, user_id: str, client_pk: int | None) -> None:
        """Forget the member's consent to the app (to every app when `client_pk` is None)."""
        which = _consents.c.user_id == user_id
        if client_pk is not None:
            which &= _consents.c.client_id == client_pk
        run(_consents.delete().where(which))

    def narrow(self, user_id: str, keep: Callable[[list[str]], list[str]]) -> int:
        """Rewrite each of the member's consents to `keep(scopes)`; how many changed."""
        changed = 0
        for row in run(select(_consents.c.id, _consents.c.scope).where(_consents.c.user_id == user_id)).all():
            narrowed = join(keep(scope_list(row.scope)))
            if narrowed != row.scope:
                run(_consents.update().where(_consents.c.id == row.id).values(scope=narrowed))
                changed += 1
        return changed
