"""The registration fee ledger: a flat 99 dollars per registered application per calendar month.

The ledger is derived from each app's registration history (`created_at`, `deleted_at`), which
never changes once written, so it needs no billing job and reads the same from any process.
Sign-in usage is never metered.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.models import User
from app.models.base import utcnow
from app.store import store
from app.store.apps import RegisteredApp

MONTHLY_FEE = 99
CURRENCY = "USD"
MAX_MONTHS = 36  # the widest range one report covers

# The policy, stated once: the console page shows this text (docs/console.md quotes it).
POLICY = (
    "Each registered application costs 99 USD for every calendar month (UTC) in which it is "
    "registered for at least part of the month. The first month is charged in full however late "
    "in the month the app was registered, and so is the month it is deleted: there is no pro-rating. "
    "A disabled app is still registered and still charged; deleting it stops the fee from the next "
    "month on. Sign-ins are never metered."
)

MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class FeeError(ValueError):
    """A report that cannot be produced as asked (bad or future month)."""


@dataclass(frozen=True, order=True)
class Month:
    year: int
    month: int

    @classmethod
    def parse(cls, text: str) -> Month:
        match = MONTH.match((text or "").strip())
        if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 1970:
            raise FeeError(f"month must look like YYYY-MM, got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    @classmethod
    def of(cls, moment: datetime) -> Month:
        moment = moment.astimezone(UTC)
        return cls(moment.year, moment.month)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def next(self) -> Month:
        return Month(self.year + 1, 1) if self.month == 12 else Month(self.year, self.month + 1)

    @property
    def previous(self) -> Month:
        return Month(self.year - 1, 12) if self.month == 1 else Month(self.year, self.month - 1)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def months(first: Month, last: Month) -> list[Month]:
    out = [first]
    while out[-1] < last:
        out.append(out[-1].next)
    return out


def is_billable(client: RegisteredApp, month: Month) -> bool:
    """Registered for at least part of `month`: created before it ended, deleted (if ever) after it began."""
    return client.created_at < month.next.start and (client.deleted_at is None or client.deleted_at > month.start)


@dataclass(frozen=True)
class LedgerLine:
    month: str
    client_id: str
    app_name: str
    owner_id: str | None
    owner_email: str | None
    status: str
    amount: int
    deleted_on: str | None = None  # YYYY-MM-DD (UTC): a deleted app stays in the ledger, marked

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "currency": CURRENCY}


@dataclass
class Ledger:
    first: Month
    last: Month
    lines: list[LedgerLine] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(line.amount for line in self.lines)

    @property
    def by_month(self) -> dict[str, int]:
        """Total per month, every month of the range (zero when nothing was registered)."""
        totals = {str(m): 0 for m in months(self.first, self.last)}
        for line in self.lines:
            totals[line.month] += line.amount
        return totals

    @property
    def by_owner(self) -> list[dict[str, Any]]:
        totals: dict[tuple[str | None, str | None], dict[str, Any]] = defaultdict(lambda: {"apps": set(), "amount": 0})
        for line in self.lines:
            entry = totals[(line.owner_id, line.owner_email)]
            entry["apps"].add(line.client_id)
            entry["amount"] += line.amount
        return [
            {"owner_id": owner_id, "owner_email": email, "apps": len(v["apps"]), "amount": v["amount"]}
            for (owner_id, email), v in sorted(totals.items(), key=lambda kv: kv[0][1] or "")
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": str(self.first),
            "to": str(self.last),
            "currency": CURRENCY,
            "monthly_fee": MONTHLY_FEE,
            "policy": POLICY,
            "lines": [line.as_dict() for line in self.lines],
            "total_by_month": self.by_month,
            "total_by_owner": self.by_owner,
            "total": self.total,
        }


def ledger(first: Month, last: Month, owner: User | None = None, now: datetime | None = None) -> Ledger:
    """The fee lines of every app (one owner's apps when `owner` is given) for each month from
    `first` to `last`, newest month first. Months after the current one are not billed yet."""
    current = Month.of(now or utcnow())
    if first > last:
        raise FeeError(f"the range starts ({first}) after it ends ({last})")
    if first > current:
        raise FeeError(f"{first} has not started yet: nothing is billed for it")
    last = min(last, current)
    if len(months(first, last)) > MAX_MONTHS:
        raise FeeError(f"a report covers at most {MAX_MONTHS} months")
    rows = store().apps.registered_during(first.start, last.next.start, owner_id=None if owner is None else owner.id)
    result = Ledger(first, last)
    for month in reversed(months(first, last)):
        for client, app_owner in rows:
            if is_billable(client, month):
                result.lines.append(
                    LedgerLine(
                        month=str(month),
                        client_id=client.client_id,
                        app_name=client.name,
                        owner_id=client.owner_id,
                        owner_email=app_owner.email if app_owner else None,
                        status=client.status,
                        amount=MONTHLY_FEE,
                        deleted_on=client.deleted_at.astimezone(UTC).date().isoformat() if client.deleted_at else None,
                    )
                )
    return result


def month_report(month: Month, owner: User | None = None, now: datetime | None = None) -> Ledger:
    return ledger(month, month, owner=owner, now=now)
