"""The console's actions on the command line (parity with the web pages), each with `--json`:
`flask clients rotate-secret|disable|enable|delete`,
`flask users set-role|set-tier|set-password|suspend|unsuspend|remove-second-factor`,
`flask fees report`. They call the same services as the pages and leave the same audit trail
(source `cli`)."""

from __future__ import annotations

import sys

import click
from flask.cli import AppGroup

from app.cli import clients, emit, fail, grace_option, json_option, users
from app.console.apps import AppNotFound, delete_app, disable_app, enable_app, find_app, rotate_app_secret
from app.extensions import db
from app.fees import CURRENCY, FeeError, Month, month_report
from app.members import (
    MemberError,
    change_password,
    find_member,
    set_role,
    set_tier,
    suspend_member,
    unsuspend_member,
)
from app.models import Role, Tier
from app.models.base import new_secret
from app.registration import MAX_SECRET_GRACE, RegistrationError

fees = AppGroup("fees", help="The registration fee ledger (99 per app per month).")


def _app(client_id: str):
    try:
        return find_app(client_id)
    except AppNotFound as exc:
        fail(str(exc))


def _lines(d: dict) -> str:
    return "\n".join(f"{k}: {v}" for k, v in d.items() if v is not None)


@clients.command("rotate-secret")
@click.argument("client_id")
@grace_option(MAX_SECRET_GRACE, "secret")
@json_option
def clients_rotate_secret(client_id, grace, as_json):
    """Issue a new client secret; it is printed once, only its hash is stored."""
    client = _app(client_id)
    try:
        secret = rotate_app_secret(client, actor=None, grace=grace)
    except RegistrationError as exc:
        fail(str(exc))
    data = {
        "client_id": client.client_id,
        "client_secret": secret,
        "previous_secret_valid_until": client.previous_secret_expires_at.isoformat()
        if client.previous_secret_expires_at
        else None,
    }
    emit(data, as_json, lambda d: _lines(d) + "\n(the secret is shown only now)")


@clients.command("disable")
@click.argument("client_id")
@json_option
def clients_disable(client_id, as_json):
    """Disable an app: sign-ins show an error page and its tokens are refused until enabled."""
    client = _app(client_id)
    changed = disable_app(client, actor=None)
    emit(
        {"client_id": client.client_id, "status": client.status, "changed": changed},
        as_json,
        lambda d: f"{d['client_id']} is {d['status']}" + ("" if d["changed"] else " (it already was)"),
    )


@clients.command("enable")
@click.argument("client_id")
@json_option
def clients_enable(client_id, as_json):
    """Enable a disabled app again."""
    client = _app(client_id)
    changed = enable_app(client, actor=None)
    emit(
        {"client_id": client.client_id, "status": client.status, "changed": changed},
        as_json,
        lambda d: f"{d['client_id']} is {d['status']}" + ("" if d["changed"] else " (it already was)"),
    )


@clients.command("delete")
@click.argument("client_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def clients_delete(client_id, yes, as_json):
    """Delete an app: revokes all its tokens and removes every consent given to it."""
    client = _app(client_id)
    if not yes:
        click.confirm(f"Delete {client.name} ({client.client_id})? Its tokens and consents are revoked", abort=True)
    counts = delete_app(client, actor=None)
    emit(
        {"client_id": client.client_id, "status": client.status, **counts},
        as_json,
        lambda d: (
            f"deleted {d['client_id']}: {d['tokens_revoked']} tokens revoked, {d['consents_removed']} consents removed"
        ),
    )


def _member(email: str):
    try:
        return find_member(email)
    except MemberError as exc:
        fail(str(exc))


@users.command("set-role")
@click.argument("email")
@click.argument("role", type=click.Choice([r.value for r in Role]))
@json_option
def users_set_role(email, role, as_json):
    """Give a member the role member, developer (owns apps in the console) or admin."""
    user = _member(email)
    before = user.role
    try:
        set_role(user, role)
    except MemberError as exc:
        fail(str(exc))
    db.session.commit()
    emit({"id": user.id, "email": user.email, "role": user.role, "previous_role": before}, as_json, _lines)


@users.command("suspend")
@click.argument("email")
@click.option("--reason", default=None, help="Why (kept in the audit trail).")
@json_option
def users_suspend(email, reason, as_json):
    """Suspend a member: sign-in refused, every session ended, every app's tokens revoked."""
    user = _member(email)
    ended = suspend_member(user, reason=reason)
    db.session.commit()
    emit({"id": user.id, "email": user.email, "suspended": True, **ended}, as_json, _lines)


@users.command("unsuspend")
@click.argument("email")
@json_option
def users_unsuspend(email, as_json):
    """Lift a member's suspension: they may sign in again."""
    user = _member(email)
    changed = unsuspend_member(user)
    db.session.commit()
    emit({"id": user.id, "email": user.email, "suspended": False, "changed": changed}, as_json, _lines)


@users.command("remove-second-factor")
@click.argument("email")
@json_option
def users_remove_second_factor(email, as_json):
    """Support: turn a member's two-step verification off (lost phone, recovery codes and passkeys),
    after checking who they are by other means. Sign-in then asks for the password only."""
    from app.auth.passkeys import passkeys_of
    from app.auth.passkeys import remove as remove_passkey
    from app.auth.second_factor import remove_totp

    user = _member(email)
    removed = remove_totp(user, actor=None)
    passkeys_removed = sum(remove_passkey(user, p.id, actor=None) for p in passkeys_of(user))
    db.session.commit()
    if removed or passkeys_removed:
        from app.auth.notices import security_notice
        from app.mail import deliver

        try:
            deliver(security_notice(user, "Support turned your two-step verification off"))
        except Exception as exc:  # the change is made; the notice is a courtesy
            click.echo(f"warning: the notice to {user.email} was not sent ({type(exc).__name__})", err=True)
    emit(
        {"id": user.id, "email": user.email, "removed": removed, "passkeys_removed": passkeys_removed}, as_json, _lines
    )


@users.command("set-password")
@click.argument("email")
@click.option("--password-stdin", is_flag=True, help="Read the new password from standard input.")
@click.option("--disconnect-apps", is_flag=True, help="Also revoke every app's consent and tokens (a compromise).")
@json_option
def users_set_password(email, password_stdin, disconnect_apps, as_json):
    """Give a member a new password (support, after they lost theirs): every session of theirs
    ends. Without --password-stdin a random password is generated and shown once."""
    user = _member(email)
    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else new_secret(12)
    try:
        ended = change_password(user, password, disconnect_apps=disconnect_apps)
    except MemberError as exc:
        fail(str(exc))
    db.session.commit()
    data = {"id": user.id, "email": user.email, **ended}
    if not password_stdin:
        data["password"] = password
    emit(data, as_json, _lines)


@users.command("set-tier")
@click.argument("email")
@click.argument("tier", type=click.Choice([t.value for t in Tier]))
@json_option
def users_set_tier(email, tier, as_json):
    """Change a member's membership (basic or pro); a downgrade applies to existing tokens at once."""
    user = _member(email)
    before = user.tier
    set_tier(user, tier)
    db.session.commit()
    emit({"id": user.id, "email": user.email, "tier": user.tier, "previous_tier": before}, as_json, _lines)


@fees.command("report")
@click.option("--month", "month_text", required=True, help="The calendar month, YYYY-MM (UTC).")
@json_option
def fees_report(month_text, as_json):
    """The fee ledger of one month: a line per app, totals per owner and overall."""
    try:
        report = month_report(Month.parse(month_text))
    except FeeError as exc:
        fail(str(exc))
    data = report.as_dict()

    def human(d):
        out = [f"Fees for {d['from']} ({d['monthly_fee']} {CURRENCY} per app per month)"]
        out += [
            f"  {x['client_id']:<24} {x['app_name'][:30]:<30} {x['owner_email'] or '(no owner)':<30} "
            f"{x['status']:<8} {x['amount']}"
            for x in d["lines"]
        ] or ["  no registered apps"]
        out.append("Per owner:")
        out += [
            f"  {o['owner_email'] or '(no owner)':<30} {o['apps']} apps  {o['amount']}" for o in d["total_by_owner"]
        ]
        out.append(f"Total: {d['total']} {CURRENCY}")
        return "\n".join(out)

    emit(data, as_json, human)
