"""The monthly statement of an account: what was posted to its ledger in a UTC month, and the
sign-in program fees of the owner's registered apps for that month.

Two parts, each reconciling to its own ledger to the cent:
- **Prepaid credits**: the opening balance (the sum of every entry posted before the month), each
  entry posted in the month - loads, starter credit, refunds and adjustments; plan fees; usage by
  key, day and band - and the closing balance, which is the opening balance plus those entries and
  equals the ledger's sum at the month's end (`reconciles`). Entries are listed by the month they
  were *posted* in: the calls of a month's last day are posted early the next day, so they appear
  on the next month's statement, under the day they were made.
- **Sign-in program fees**: 99 per registered app for the month (app/services/fees.py, derived
  from the apps' registration history, which is that fee's ledger). They are not metered and not
  drawn from prepaid credits: they are invoiced, and the statement's total due says so.

`csv_text` is the same statement as CSV, one row per line, for a spreadsheet."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from app.core.extensions import db
from app.models import User
from app.services.billing.ledger import CURRENCY, KINDS
from app.services.fees import LedgerLine, Month, month_report
from app.store import store
from app.store.billing import Account, Entry

ZERO = Decimal("0.00")
BAND_NAMES = {0: "plan rate", 1: "band 1 (first 100,000)", 2: "band 2 (to 300,000)", 3: "band 3 (beyond 300,000)"}


@dataclass
class Statement:
    account: Account
    owner: User
    month: Month
    opening: Decimal
    closing: Decimal
    entries: list[Entry]
    signin_fees: list[LedgerLine]
    key_names: dict[str, str] = field(default_factory=dict)

    @property
    def credits(self) -> list[Entry]:
        return [e for e in self.entries if e.kind in ("load", "starter", "refund", "adjustment")]

    @property
    def plan_fees(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == "plan_fee"]

    @property
    def usage(self) -> list[Entry]:
        return sorted(
            (e for e in self.entries if e.kind == "usage"), key=lambda e: (e.key_id or "", e.day or 0, e.band or 0)
        )

    @property
    def usage_by_key(self) -> list[tuple[str, list[Entry], int, Decimal]]:
        """Per key: its usage lines, calls and amount drawn (positive)."""
        grouped: dict[str, list[Entry]] = defaultdict(list)
        for entry in self.usage:
            grouped[entry.key_id or ""].append(entry)
        return [
            (key_id, lines, sum(e.calls or 0 for e in lines), -sum((e.amount for e in lines), ZERO))
            for key_id, lines in grouped.items()
        ]

    def total(self, kind: str) -> Decimal:
        return sum((e.amount for e in self.entries if e.kind == kind), ZERO)

    @property
    def totals(self) -> dict[str, Decimal]:
        return {kind: self.total(kind) for kind in KINDS}

    @property
    def net(self) -> Decimal:
        return sum((e.amount for e in self.entries), ZERO)

    @property
    def reconciles(self) -> bool:
        return self.opening + self.net == self.closing

    @property
    def signin_total(self) -> Decimal:
        return sum((Decimal(line.amount) for line in self.signin_fees), ZERO)

    @property
    def currency(self) -> str:
        return CURRENCY

    def key_label(self, key_id: str | None) -> str:
        return self.key_names.get(key_id or "", key_id or "-")


def statement(account: Account, month: Month) -> Statement:
    """The statement of `account` for `month` (FeeError for a month not started yet)."""
    owner = db.session.get(User, account.owner_id)
    assert owner is not None
    signin = month_report(month, owner=owner)  # refuses a future month
    billing = store().billing
    start, end = month.start, month.next.start
    entries = billing.entries(account.id, start, end)
    key_ids = {e.key_id for e in entries if e.key_id}
    names = {}
    if key_ids:
        names = {key_id: f"{name} ({prefix}…)" for key_id, (name, prefix) in store().api_keys.names(key_ids).items()}
    return Statement(
        account,
        owner,
        month,
        billing.balance_before(account.id, start),
        billing.balance_before(account.id, end),
        entries,
        signin.lines,
        names,
    )


def csv_text(s: Statement) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["section", "posted_at", "kind", "key", "day", "band", "calls", "rate", "amount", "currency", "memo"]
    )
    writer.writerow(
        ["opening balance", s.month.start.date().isoformat(), "", "", "", "", "", "", s.opening, CURRENCY, ""]
    )
    for entry in s.entries:
        writer.writerow(
            [
                "prepaid credits",
                entry.posted_at.isoformat(timespec="seconds"),
                entry.kind,
                s.key_label(entry.key_id) if entry.key_id else "",
                entry.day.isoformat() if entry.day else "",
                BAND_NAMES.get(entry.band, "") if entry.band is not None else "",
                entry.calls if entry.calls is not None else "",
                entry.rate if entry.rate is not None else "",
                entry.amount,
                CURRENCY,
                entry.memo,
            ]
        )
    writer.writerow(
        ["closing balance", s.month.next.start.date().isoformat(), "", "", "", "", "", "", s.closing, CURRENCY, ""]
    )
    for line in s.signin_fees:
        writer.writerow(
            [
                "sign-in program fees",
                str(s.month),
                "signin_fee",
                "",
                "",
                "",
                "",
                "",
                f"{line.amount:.2f}",
                CURRENCY,
                f"{line.app_name} ({line.client_id})",
            ]
        )
    writer.writerow(
        [
            "sign-in program fees due",
            str(s.month),
            "",
            "",
            "",
            "",
            "",
            "",
            s.signin_total,
            CURRENCY,
            "invoiced, not drawn from credits",
        ]
    )
    return out.getvalue()
