"""`flask purge-expired`: delete what can no longer be used (app/services/housekeeping.py), in batches.
The command owns the transactions: it commits after every batch, so requests served meanwhile
never wait long on a lock and an interrupted purge keeps what it already deleted."""

from __future__ import annotations

from typing import Any

import click
from flask import current_app

from app.cli.output import emit, json_option
from app.core.extensions import db
from app.services.housekeeping import count_expired, purge_expired
from app.services.metering import fold_meter


@click.command("purge-expired")
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=None, help="Rows per transaction (default: PURGE_BATCH_SIZE)."
)
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@json_option
def purge_expired_command(batch_size: int | None, dry_run: bool, as_json: bool) -> None:
    """Delete expired codes, tokens, sessions, pending sign-ins, mailed links and passkey
    challenges, and audit events past their retention (AUDIT_RETENTION_DAYS), in batches (safe
    while serving); then fold the meter's counters of past days into one row per key and day."""
    if dry_run:
        counts = count_expired()
        data: dict[str, Any] = {"dry_run": True, "expired": counts}
    else:
        size = batch_size or int(current_app.config["PURGE_BATCH_SIZE"])
        counts = purge_expired(size, end_batch=db.session.commit)
        folded = fold_meter()
        db.session.commit()
        data = {"dry_run": False, "deleted": counts, "batch_size": size, "meter_rows_folded": folded}
    verb = "would delete" if dry_run else "deleted"

    def human(d: dict[str, Any]) -> str:
        lines = [f"{verb} {n} {table}" for table, n in counts.items()]
        if not dry_run:
            lines.append(f"folded {d['meter_rows_folded']} meter rows of past days")
        return "\n".join(lines)

    emit(data, as_json, human)
