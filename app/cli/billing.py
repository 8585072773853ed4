"""`flask billing ...`: the operators' side of billing (docs/billing.md).

    post        the daily job: post each finished UTC day's calls, renew plans (cron it after 00:00 UTC)
    show        an account: balance, plan, terms, recent entries
    accounts    every account and its balance
    adjust      credit or debit an account, with the reason (audited)
    refund      give back part or all of a card payment (to the card; audited)
    enterprise  set or end an account's enterprise terms
    statement   a month's statement as CSV (to reconcile, or to send)

Each command is one unit of work: it calls app/services/billing/ and commits once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from app.cli.output import CommandGroup, emit, fail, json_option
from app.core.extensions import db
from app.models import User
from app.services.billing import enterprise
from app.services.billing.ledger import BillingError, account_for, adjust, balance, entries, parse_amount
from app.services.billing.payments import refund
from app.services.billing.posting import run_daily
from app.services.billing.statements import csv_text, statement
from app.services.fees import FeeError, Month
from app.services.members import MemberError, find_member
from app.store import store

billing = CommandGroup("billing", help="Prepaid accounts: the posting job, adjustments, refunds, terms, statements.")


def _owner(email: str) -> User:
    try:
        return find_member(email)
    except MemberError as exc:
        fail(str(exc))


@billing.command("post")
@click.option("--through", type=click.DateTime(["%Y-%m-%d"]), help="Post days before this one (default: today, UTC).")
@json_option
def billing_post(through: datetime | None, as_json: bool) -> None:
    """Post every finished day's calls (idempotent: run it twice, it posts once), then renew plans."""
    result = run_daily(through.date() if through else None)
    db.session.commit()
    emit(
        result.as_dict(),
        as_json,
        lambda d: "\n".join(
            [f"Posted {d['lines']} lines, {d['amount']} USD, on {d['accounts']} accounts (days before {d['through']})"]
            + [f"  {line}" for line in d["renewals"]]
        ),
    )


def _summary(owner: User) -> dict[str, Any]:
    account = account_for(owner)
    return {
        "account_id": account.id,
        "owner": owner.email,
        "balance": str(balance(account)),
        "plan": account.plan,
        "next_plan": account.next_plan,
        "enterprise": account.enterprise,
        "storage_allowed": account.storage_allowed,
        "terms_until": account.terms_until.isoformat() if account.terms_until else None,
        "card": account.card_label,
        "entries": [
            {
                "posted_at": e.posted_at.isoformat(timespec="seconds"),
                "kind": e.kind,
                "amount": str(e.amount),
                "memo": e.memo,
                "payment_ref": e.payment_ref,
            }
            for e in entries(account)[-20:]
        ],
        "payments": [
            {"id": p.id, "ref": p.provider_ref, "status": p.status, "amount": f"{p.amount_cents / 100:.2f}"}
            for p in store().billing.payments_of(account.id, 10)
        ],
    }


def _human(d: dict[str, Any]) -> str:
    out = [
        f"{d['owner']}: balance {d['balance']} USD, plan {d['plan']}"
        + (f" -> {d['next_plan']}" if d["next_plan"] else "")
    ]
    if d["enterprise"]:
        out.append(
            f"  enterprise terms until {d['terms_until'] or '(open)'}; storage {'allowed' if d['storage_allowed'] else 'not allowed'}"
        )
    out.append(f"  card: {d['card'] or 'none'}")
    out += [f"  {e['posted_at']}  {e['kind']:<10} {e['amount']:>12}  {e['memo']}" for e in d["entries"]]
    out += [f"  payment {p['id']} {p['ref'] or ''} {p['status']} {p['amount']}" for p in d["payments"]]
    return "\n".join(out)


@billing.command("show")
@click.argument("email")
@json_option
def billing_show(email: str, as_json: bool) -> None:
    """An account: balance, plan, terms, its last entries and payments."""
    data = _summary(_owner(email))
    db.session.commit()
    emit(data, as_json, _human)


@billing.command("accounts")
@json_option
def billing_accounts(as_json: bool) -> None:
    """Every account and its balance."""
    lines = [
        {
            "owner": line.owner_email,
            "plan": line.account.plan,
            "enterprise": line.account.enterprise,
            "balance": str(line.balance),
        }
        for line in store().billing.with_owners()
    ]
    emit(
        lines,
        as_json,
        lambda rows: "\n".join(f"{r['owner']:<40} {r['plan']:<6} {r['balance']:>12}" for r in rows) or "no accounts",
    )


@billing.command("adjust")
@click.argument("email")
@click.argument("amount")
@click.option("--reason", required=True, help="Why (kept on the entry and the audit trail).")
@json_option
def billing_adjust(email: str, amount: str, reason: str, as_json: bool) -> None:
    """Credit (AMOUNT > 0) or debit (AMOUNT < 0) the account of EMAIL."""
    owner = _owner(email)
    try:
        adjust(account_for(owner), parse_amount(amount, positive=False), reason)
    except BillingError as exc:
        fail(str(exc))
    db.session.commit()
    emit(_summary(owner), as_json, _human)


@billing.command("refund")
@click.argument("payment_id")
@click.argument("amount")
@click.option("--reason", default="Refund to card", show_default=True)
@json_option
def billing_refund(payment_id: str, amount: str, reason: str, as_json: bool) -> None:
    """Refund AMOUNT of a card payment (our id or the provider's) to its card."""
    billing_store = store().billing
    payment = billing_store.payment(payment_id[:36]) or billing_store.payment_by_ref(payment_id[:255])
    if payment is None:
        fail(f"no payment {payment_id}")
    try:
        refund(payment, parse_amount(amount), memo=reason)
    except (BillingError, ValueError) as exc:
        fail(str(exc))
    db.session.commit()
    account = store().billing.account(payment.account_id)
    owner = db.session.get(User, account.owner_id) if account else None
    if owner is None:
        fail(f"the account of payment {payment_id} has no owner any more")
    emit(_summary(owner), as_json, _human)


@billing.command("enterprise")
@click.argument("email")
@click.option("--on/--off", "on", required=True, help="Enterprise terms, or back to standard.")
@click.option(
    "--storage/--no-storage", default=False, help="The agreement allows caching or storing data for the term."
)
@click.option("--until", type=click.DateTime(["%Y-%m-%d"]), help="The last day of the term.")
@click.option("--note", default="", help="The agreement's reference.")
@json_option
def billing_enterprise(email: str, on: bool, storage: bool, until: datetime | None, note: str, as_json: bool) -> None:
    """Set or end the enterprise terms of the account of EMAIL."""
    owner = _owner(email)
    try:
        enterprise.set_terms(account_for(owner), on, storage, until.date() if until else None, note)
    except BillingError as exc:
        fail(str(exc))
    db.session.commit()
    emit(_summary(owner), as_json, _human)


@billing.command("statement")
@click.argument("email")
@click.option("--month", "month_text", required=True, help="YYYY-MM (UTC).")
def billing_statement(email: str, month_text: str) -> None:
    """The month's statement of the account of EMAIL, as CSV on standard output."""
    owner = _owner(email)
    try:
        found = statement(account_for(owner), Month.parse(month_text))
    except FeeError as exc:
        fail(str(exc))
    db.session.commit()
    click.echo(csv_text(found), nl=False)
