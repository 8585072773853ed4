"""`flask fees report`: one month of the registration fee ledger (app/services/fees.py), read only."""

from __future__ import annotations

from typing import Any

import click

from app.cli.output import CommandGroup, emit, fail, json_option
from app.services.fees import CURRENCY, FeeError, Month, month_report
from app.services.metering import utc_day


def this_month() -> Month:
    today = utc_day()
    return Month(today.year, today.month)


fees = CommandGroup("fees", help="The registration fee ledger (99 per app per month).")


@fees.command("report")
@click.option("--month", "month_text", default=None, help="The calendar month, YYYY-MM (UTC); default: this month.")
@json_option
def fees_report(month_text: str | None, as_json: bool) -> None:
    """The fee ledger of one month: a line per app, totals per owner and overall."""
    try:
        report = month_report(Month.parse(month_text) if month_text else this_month())
    except FeeError as exc:
        fail(str(exc))
    emit(report.as_dict(), as_json, _human)


def _human(d: dict[str, Any]) -> str:
    out = [f"Fees for {d['from']} ({d['monthly_fee']} {CURRENCY} per app per month)"]
    out += [
        f"  {x['client_id']:<24} {x['app_name'][:30]:<30} {x['owner_email'] or '(no owner)':<30} "
        f"{x['status']:<8} {x['amount']} {CURRENCY}"
        for x in d["lines"]
    ] or ["  no registered apps"]
    out.append("Per owner:")
    out += [
        f"  {o['owner_email'] or '(no owner)':<30} {o['apps']} apps  {o['amount']} {CURRENCY}"
        for o in d["total_by_owner"]
    ]
    out.append(f"Total: {d['total']} {CURRENCY}")
    return "\n".join(out)
