"""`flask api-keys create|list|rotate|revoke|usage`, each with `--json`: the console's API-key
actions for scripts and operators. Each command is one unit of work (one commit), calls the same
service as the console (app/services/apikeys.py) and leaves the same audit event (source `cli`)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import click

from app.cli.output import CommandGroup, emit, fail, grace_option, json_option
from app.core.extensions import db
from app.models import ApiKey, KeyKind, KeyPlan
from app.services.apikeys import (
    CONSOLE_KINDS,
    CONSOLE_PLANS,
    MAX_GRACE,
    ApiKeyError,
    KeyNotFound,
    create_key,
    every_key,
    find_key,
    key_json,
    revoke_key,
    rotate_key,
)
from app.services.members import MemberError, find_member
from app.services.metering import usage_for

api_keys = CommandGroup(
    "api-keys",
    help="API keys for the catalog API and the widget API (secret msk_, publishable mpk_; members' workspace keys "
    "mwk_ are made on their account page, and listed, rotated and revoked here too).",
)


def _key(key_id: str) -> ApiKey:
    try:
        return find_key(key_id)
    except KeyNotFound as exc:
        fail(str(exc))


def _human(d: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in d.items() if v not in (None, []))


@api_keys.command("create")
@click.option("--owner", "owner_email", required=True, help="The developer or admin (email) who holds the key.")
@click.option("--name", required=True)
@click.option("--kind", type=click.Choice(CONSOLE_KINDS), default=KeyKind.SECRET.value, show_default=True)
@click.option("--plan", type=click.Choice(CONSOLE_PLANS), default=KeyPlan.PAYG.value, show_default=True)
@click.option("--domain", "domains", multiple=True, help="A publishable key's domain (host name); repeat for several.")
@json_option
def api_keys_create(owner_email: str, name: str, kind: str, plan: str, domains: tuple[str, ...], as_json: bool) -> None:
    """Create a key. Its value is printed once; only a hash is stored."""
    try:
        owner = find_member(owner_email)
        key, value = create_key(owner, name, kind, plan, list(domains))  # checks everything before writing
    except (MemberError, ApiKeyError) as exc:
        fail(str(exc))
    db.session.commit()
    emit({**key_json(key), "key": value}, as_json, lambda d: _human(d) + "\n(the key is shown only now)")


@api_keys.command("list")
@click.option("--owner", "owner_email", default=None, help="Only this member's keys.")
@json_option
def api_keys_list(owner_email: str | None, as_json: bool) -> None:
    """Every key (or one member's), newest first, with this month's usage and amount."""
    owner_id = None
    if owner_email:
        try:
            owner_id = find_member(owner_email).id
        except MemberError as exc:
            fail(str(exc))
    keys = every_key(owner_id)
    data = [
        {**key_json(u.key), "month_requests": u.month_calls, "month_amount": str(u.amount)} for u in usage_for(keys)
    ]
    emit(
        data,
        as_json,
        lambda rows: (
            "\n".join(
                f"{r['id']}  {r['prefix']}...  {r['kind']:<11} {r['plan']:<5} {r['status']:<7} {r['name']}  "
                f"({r['month_requests']} requests this month, {r['month_amount']} USD)"
                for r in rows
            )
            or "no API keys"
        ),
    )


@api_keys.command("rotate")
@click.argument("key_id")
@grace_option(MAX_GRACE, "value")
@json_option
def api_keys_rotate(key_id: str, grace: timedelta | None, as_json: bool) -> None:
    """Issue a new value for the key (same id, plan and usage); printed once."""
    key = _key(key_id)
    try:
        value = rotate_key(key, grace)  # checks everything before writing
    except ApiKeyError as exc:
        fail(str(exc))
    db.session.commit()
    emit({**key_json(key), "key": value}, as_json, lambda d: _human(d) + "\n(the key is shown only now)")


@api_keys.command("revoke")
@click.argument("key_id")
@json_option
def api_keys_revoke(key_id: str, as_json: bool) -> None:
    """Stop the key at once (final)."""
    key = _key(key_id)
    changed = revoke_key(key)
    db.session.commit()
    emit(
        {**key_json(key), "changed": changed},
        as_json,
        lambda d: f"{d['prefix']}... is revoked" + ("" if changed else " (it already was)"),
    )


@api_keys.command("usage")
@click.argument("key_id")
@click.option("--month", default=None, help="YYYY-MM (default: this UTC month).")
@json_option
def api_keys_usage(key_id: str, month: str | None, as_json: bool) -> None:
    """A key's requests per day in a month, the month's total and its amount on the key's plan."""
    key = _key(key_id)
    try:
        first = date.fromisoformat(f"{month}-01") if month else None
    except ValueError:
        fail(f"month must look like YYYY-MM, got {month!r}")
    usage = usage_for([key], first)[0]
    data = {
        "id": key.id,
        "plan": key.plan,
        "days": {d.isoformat(): n for d, n in usage.days},
        "month_requests": usage.month_calls,
        "month_amount": str(usage.amount),
        "currency": "USD",
    }
    emit(
        data,
        as_json,
        lambda d: "\n".join(
            [f"{day}: {n}" for day, n in d["days"].items()]
            + [f"month: {d['month_requests']} requests, {d['month_amount']} USD"]
        ),
    )
