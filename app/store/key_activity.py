"""An API key's recent requests in SQL (`api_key_requests`, app/models/key_activity.py), the same
statements on SQLite and PostgreSQL.

Written in batches (app/web/key_activity.py: a process keeps what its requests did for a moment
and hands it over together), so no request waits on this table. A batch is one lookup of its keys
(a key deleted meanwhile drops its rows), one multi-row INSERT, and for each key one DELETE of what
lies beyond its newest `keep` rows, through the (key_id, id) index: a key's trim reads at most
`keep` index entries to find where to cut. Keys are trimmed in id order, so two processes trimming
the same keys take their row locks in the same order. Two processes writing one key at the same
moment may leave it a few rows over `keep` until its next batch; the page reads the newest `keep`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, insert, select

from app.models import ApiKey, KeyRequest
from app.store.statements import run

_requests, _keys = KeyRequest.__table__, ApiKey.__table__
COLUMNS = ("key_id", "at", "surface", "method", "path", "tool", "status", "message", "request_id")


@dataclass(frozen=True, slots=True)
class KeyRequestRecord:
    """One request made with a key, as the console lists it."""

    at: datetime
    surface: str
    method: str
    path: str
    tool: str | None
    status: int
    message: str | None
    request_id: str


_INSERT = insert(_requests)
_READ = (
    select(*(_requests.c[name] for name in KeyRequestRecord.__slots__))
    .where(_requests.c.key_id == bindparam("key_id"))
    .order_by(_requests.c.id.desc())
    .limit(bindparam("limit"))
)


def _trim(keep: int) -> Any:
    """DELETE a key's rows older than its `keep`-th newest (nothing when it has `keep` or fewer)."""
    cut = (
        select(_requests.c.id)
        .where(_requests.c.key_id == bindparam("key_id"))
        .order_by(_requests.c.id.desc())
        .limit(1)
        .offset(keep)
        .scalar_subquery()
    )
    return delete(_requests).where(_requests.c.key_id == bindparam("key_id"), _requests.c.id <= cut)


class SqlKeyActivity:
    """Each key's recent requests, written and read in the caller's transaction."""

    def __init__(self) -> None:
        self._trims: dict[int, Any] = {}  # one statement per bound, built once

    def add(self, rows: Sequence[dict[str, Any]], keep: int) -> None:
        """Insert `rows` (dicts of COLUMNS, oldest first), then cut each of their keys back to its
        newest `keep` rows. Rows of a key deleted meanwhile (its owner's account deleted) are
        dropped first, so they cannot fail the batch of everyone else's."""
        key_ids = {row["key_id"] for row in rows}
        if not key_ids:
            return
        existing = set(run(select(_keys.c.id).where(_keys.c.id.in_(list(key_ids)))).scalars())
        rows = [row for row in rows if row["key_id"] in existing]
        if not rows:
            return
        run(_INSERT, rows)
        trim = self._trims.get(keep)
        if trim is None:
            trim = self._trims[keep] = _trim(keep)
        run(trim, [{"key_id": key_id} for key_id in sorted(existing & key_ids)])

    def recent(self, key_id: str, limit: int) -> list[KeyRequestRecord]:
        """The key's newest `limit` requests, newest first."""
        return [KeyRequestRecord(*row) for row in run(_READ, {"key_id": key_id, "limit": limit})]
