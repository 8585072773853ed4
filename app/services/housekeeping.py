"""Housekeeping: delete what can no longer be used, in small batches, while the service runs.

What "no longer usable" means, table by table:
  authorization_codes  past `expires_at` (used or not: a replay of it is refused as expired)
  tokens               the access token expired and the refresh token (if any) expired too; a
                       rotated-out refresh token is kept until then so its reuse is still
                       recognized and revokes its family
  login_sessions       expired or ended (signed out)
  interactions         pending sign-ins past `expires_at`
  one_time_links       mailed links (reset, verification, invitation) past `expires_at`, used or not
  webauthn_challenges  passkey challenges nobody answered, past `expires_at` (an answer deletes its own)
  audit_events         older than AUDIT_RETENTION_DAYS (it records IPs; 0 keeps it forever)

The first four are the protocol's rows: their rules are the protocol store's
(app/store/expiry.py), which knows when the protocol stops accepting one.

Each batch is one short transaction (`DELETE ... WHERE id IN (SELECT id ... LIMIT n)`), so
requests served meanwhile never wait long on a lock, and an interrupted purge simply resumes.
The caller owns those transactions: it hands in `end_batch` (`flask purge-expired` passes
`db.session.commit`), this module never commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import ColumnElement, CursorResult, Table, false, func, select

from app.core.extensions import db
from app.models import AuditEvent, OneTimeLink, WebauthnChallenge
from app.models.base import utcnow
from app.store.expiry import PURGEABLE


@dataclass(frozen=True)
class Rule:
    table: Table
    expired: Callable[[datetime], ColumnElement[bool]]


_links, _audit, _challenges = OneTimeLink.__table__, AuditEvent.__table__, WebauthnChallenge.__table__

RULES: dict[str, Rule] = {
    **{name: Rule(table, expired) for name, (table, expired) in PURGEABLE.items()},  # the protocol's rows
    "one_time_links": Rule(_links, lambda now: _links.c.expires_at <= now),
    "webauthn_challenges": Rule(_challenges, lambda now: _challenges.c.expires_at <= now),
    "audit_events": Rule(_audit, lambda now: _older_than_retention(now)),  # noqa: PLW0108 - defined below
}


def _older_than_retention(now: datetime) -> ColumnElement[bool]:
    days = int(current_app.config["AUDIT_RETENTION_DAYS"])
    return _audit.c.created_at <= now - timedelta(days=days) if days else false()


def count_expired(now: datetime | None = None) -> dict[str, int]:
    """How many rows a purge would delete now (for --dry-run)."""
    now = now or utcnow()
    return {
        name: db.session.scalar(select(func.count()).select_from(rule.table).where(rule.expired(now))) or 0
        for name, rule in RULES.items()
    }


def purge_table(rule: Rule, now: datetime, batch_size: int, end_batch: Callable[[], None]) -> int:
    """Delete the expired rows of one table, `batch_size` at a time, calling `end_batch` (the
    caller's commit) after each batch."""
    (pk,) = rule.table.primary_key.columns
    deleted = 0
    while True:
        batch = select(pk).where(rule.expired(now)).limit(batch_size).scalar_subquery()
        result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
            rule.table.delete().where(pk.in_(batch))
        )
        end_batch()
        deleted += result.rowcount
        if result.rowcount < batch_size:
            return deleted


def purge_expired(
    batch_size: int = 1000, now: datetime | None = None, *, end_batch: Callable[[], None]
) -> dict[str, int]:
    """Purge every table; returns the rows deleted per table. `now` is fixed for the whole run,
    so rows expiring during it wait for the next run rather than making it chase its tail.
    `end_batch` ends each batch's unit of work: the caller's commit."""
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    now = now or utcnow()
    return {name: purge_table(rule, now, batch_size, end_batch) for name, rule in RULES.items()}
