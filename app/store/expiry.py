"""When a row can no longer be used, said by the store that owns the rows, and its deletion in
batches (what housekeeping, app/services/housekeeping.py, drives).

What "no longer usable" means, table by table:
  authorization_codes  past `expires_at` (used or not: a replay of it is refused as expired)
  tokens               the access token expired and the refresh token (if any) expired too; a
                       rotated-out refresh token is kept until then so its reuse is still
                       recognized and revokes its family
  login_sessions       expired or ended (signed out)
  interactions         pending sign-ins past `expires_at`
  one_time_links       mailed links (reset, verification, invitation) past `expires_at`, used or not
  webauthn_challenges  passkey challenges nobody answered, past `expires_at` (an answer deletes its own)
  audit_events         written before the retention's horizon (the service says which moment)
  api_key_requests     a key's recent requests made before their retention's horizon (likewise)

A batch walks the table in primary-key order from where the last one stopped (a keyset), deleting
at most `size` rows in one short statement. Rescanning from the start instead would read every row
earlier batches deleted (their dead versions stay until vacuum) once per batch: with ten million
token rows a year old, that turns one purge into billions of row reads. The walk reads each row at
most once per purge and no index beyond the primary key is needed, so the hot paths' writes pay
for nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, func, or_, select

from app.models import (
    AuditEvent,
    AuthorizationCode,
    Interaction,
    KeyRequest,
    LoginSession,
    OneTimeLink,
    Token,
    WebauthnChallenge,
)
from app.store.statements import run

_codes, _tokens = AuthorizationCode.__table__, Token.__table__
_sessions, _interactions = LoginSession.__table__, Interaction.__table__
_links, _challenges, _audit = OneTimeLink.__table__, WebauthnChallenge.__table__, AuditEvent.__table__
_key_requests = KeyRequest.__table__

# table name -> (the table, its rows that are done with at `moment`: now, or for the audit trail
# the retention's horizon)
PURGEABLE: dict[str, tuple[Table, Callable[[datetime], ColumnElement[bool]]]] = {
    # used or not: a replay of an expired code is refused as expired
    "authorization_codes": (_codes, lambda now: _codes.c.expires_at <= now),
    # a rotated-out refresh token is kept until the pair expires, so its reuse is still recognized
    "tokens": (
        _tokens,
        lambda now: (
            (_tokens.c.access_expires_at <= now)
            & or_(_tokens.c.refresh_expires_at.is_(None), _tokens.c.refresh_expires_at <= now)
        ),
    ),
    "login_sessions": (_sessions, lambda now: or_(_sessions.c.expires_at <= now, _sessions.c.ended_at.is_not(None))),
    "interactions": (_interactions, lambda now: _interactions.c.expires_at <= now),
    "one_time_links": (_links, lambda now: _links.c.expires_at <= now),
    "webauthn_challenges": (_challenges, lambda now: _challenges.c.expires_at <= now),
    "audit_events": (_audit, lambda horizon: _audit.c.created_at <= horizon),
    "api_key_requests": (_key_requests, lambda horizon: _key_requests.c.at <= horizon),
}


class SqlExpiry:
    """Rows past use: counted, and deleted a batch at a time along the primary key."""

    def count(self, table: str, moment: datetime) -> int:
        """How many rows of `table` are done with at `moment`."""
        rows, done = PURGEABLE[table]
        return int(run(select(func.count()).select_from(rows).where(done(moment))).scalar_one())

    def delete_batch(self, table: str, moment: datetime, after: Any, size: int) -> tuple[int, Any]:
        """Delete up to `size` rows of `table` done with at `moment` whose key is past `after`
        (None: from the start), in key order. Returns how many went and the last key deleted (the
        next batch's `after`; None when none went, which ends the walk). The caller commits."""
        rows, done = PURGEABLE[table]
        (pk,) = rows.primary_key.columns
        batch = select(pk).where(done(moment)).order_by(pk).limit(size)
        if after is not None:
            batch = batch.where(pk > after)
        keys = [row[0] for row in run(rows.delete().where(pk.in_(batch.scalar_subquery())).returning(pk))]
        return len(keys), max(keys) if keys else None
