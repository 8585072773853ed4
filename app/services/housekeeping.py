"""Housekeeping: delete what can no longer be used, in small batches, while the service runs.

What "no longer usable" means, table by table, is the store's rule (app/store/expiry.py), which
knows when the protocol stops accepting a row; this module adds the policies the store cannot
know, the audit trail's retention (AUDIT_RETENTION_DAYS: it records IPs; 0 keeps it forever) and a
key's recent requests' (KEY_ACTIVITY_DAYS; the newest KEY_ACTIVITY_KEEP per key are cut as they
are written).

Each batch is one short transaction: the store deletes at most `batch_size` rows along the table's
primary key, continuing where the previous batch stopped, so requests served meanwhile never wait
long on a lock, the purge reads each row once, and an interrupted purge simply resumes. The caller
owns those transactions: it hands in `end_batch` (`flask purge-expired` passes `db.session.commit`),
this module never commits.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from flask import current_app

from app.models.base import utcnow
from app.store import store
from app.store.expiry import PURGEABLE

TABLES = tuple(PURGEABLE)


def _moment(table: str, now: datetime) -> datetime | None:
    """The moment `table`'s rows are judged at: now, or a retention's horizon (None: kept forever)."""
    if table == "api_key_requests":
        return now - timedelta(days=int(current_app.config["KEY_ACTIVITY_DAYS"]))
    if table != "audit_events":
        return now
    days = int(current_app.config["AUDIT_RETENTION_DAYS"])
    return now - timedelta(days=days) if days else None


def count_expired(now: datetime | None = None) -> dict[str, int]:
    """How many rows a purge would delete now (for --dry-run)."""
    now = now or utcnow()
    counts = {}
    for table in TABLES:
        moment = _moment(table, now)
        counts[table] = 0 if moment is None else store().expiry.count(table, moment)
    return counts


def purge_table(table: str, now: datetime, batch_size: int, end_batch: Callable[[], None]) -> int:
    """Delete the rows of `table` done with at `now`, `batch_size` at a time, calling `end_batch`
    (the caller's commit) after each batch."""
    moment = _moment(table, now)
    if moment is None:
        return 0
    deleted, after = 0, None
    while True:
        went, after = store().expiry.delete_batch(table, moment, after, batch_size)
        end_batch()
        deleted += went
        if went < batch_size:
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
    return {table: purge_table(table, now, batch_size, end_batch) for table in TABLES}
