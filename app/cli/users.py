"""`flask users list|show|create|invite|set-role|set-tier|set-password|suspend|unsuspend|remove-second-factor`:
members, from the command line. The same services and audit trail as the console's member pages
(source `cli`); each command commits once, and mails only after its commit."""

from __future__ import annotations

import sys
from typing import Any

import click
from flask import current_app
from sqlalchemy import select

from app.cli.output import CommandGroup, emit, fail, fields, json_option
from app.core.extensions import db
from app.models import Role, Tier, User
from app.models.base import new_secret
from app.services.audit import record
from app.services.mail import Mail, deliver
from app.services.members import (
    MemberError,
    change_password,
    create_member,
    find_member,
    set_role,
    set_tier,
    suspend_member,
    unsuspend_member,
)
from app.services.verification import invite, send_verification

users = CommandGroup("users", help="Members of the platform.")


def _member(email: str) -> User:
    try:
        return find_member(email)
    except MemberError as exc:
        fail(str(exc))


def _every_field(d: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in d.items())


def _deliver(mail: Mail | None, email: str) -> None:
    """Send now, and tell the operator if the mail server refused (the member exists either way)."""
    if mail is None:
        return
    try:
        deliver(mail, current_app)
    except Exception as exc:
        fail(
            f"the mail to {email} was not sent ({type(exc).__name__}: {exc}); "
            f"send another with: flask users invite {email}"
        )


@users.command("list")
@click.option("--search", default="", help="Only members whose email contains this text.")
@click.option("--role", type=click.Choice([r.value for r in Role]), default=None, help="Only members with this role.")
@click.option("--suspended", is_flag=True, help="Only suspended members.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=200, show_default=True)
@json_option
def users_list(search: str, role: str | None, suspended: bool, limit: int, as_json: bool) -> None:
    """Members by email: role, membership, whether the email is verified and whether suspended."""
    stmt = select(User).order_by(User.email).limit(limit)
    if search:
        stmt = stmt.where(User.email.contains(User.normalize_email(search), autoescape=True))
    if role:
        stmt = stmt.where(User.role == role)
    if suspended:
        stmt = stmt.where(User.suspended_at.is_not(None))
    data = [
        {
            "id": u.id,
            "email": u.email,
            "name": u.name,
            "role": u.role,
            "tier": u.tier,
            "email_verified": u.email_verified,
            "suspended": u.is_suspended,
            "created_at": u.created_at.isoformat(),
        }
        for u in db.session.scalars(stmt)
    ]
    emit(
        data,
        as_json,
        lambda d: (
            "\n".join(
                f"{u['email']:<40} {u['role']:<9} {u['tier']:<5} "
                f"{'verified' if u['email_verified'] else 'unverified':<10} {'SUSPENDED' if u['suspended'] else ''}".rstrip()
                for u in d
            )
            or "no members match"
        ),
    )


@users.command("show")
@click.argument("email")
@json_option
def users_show(email: str, as_json: bool) -> None:
    """One member, as the console's member page shows them: verified email, two-step methods, last
    sign-in, sessions, connected apps, API keys and the latest audit events."""
    from app.services.audit import describe
    from app.services.member_overview import member_overview

    m = member_overview(_member(email))
    u = m.user
    data = {
        "id": u.id,
        "email": u.email,
        "email_verified": u.email_verified,
        "name": u.name,
        "role": u.role,
        "tier": u.tier,
        "suspended_at": u.suspended_at.isoformat() if u.suspended_at else None,
        "created_at": u.created_at.isoformat(),
        "two_step_methods": m.two_step_methods,
        "recovery_codes_left": m.recovery_codes_left,
        "last_sign_in": m.last_sign_in.isoformat() if m.last_sign_in else None,
        "sessions": [
            {
                "browser": s.browser,
                "ip": s.ip,
                "signed_in_at": s.signed_in_at.isoformat(),
                "last_seen_at": s.last_seen_at.isoformat(),
            }
            for s in m.sessions
        ],
        "connected_apps": [
            {"client_id": c.client.client_id, "name": c.client.name, "scopes": [s["name"] for s in c.scopes]}
            for c in m.connections
        ],
        "api_keys": [{"id": k.id, "name": k.name, "prefix": k.prefix, "status": k.status} for k in m.api_keys],
        "recent_events": [
            {"at": e.created_at.isoformat(), "action": e.action, "what": describe(e), "detail": e.detail}
            for e in m.events.items
        ],
    }
    emit(data, as_json, _human_member)


def _human_member(d: dict[str, Any]) -> str:
    out = [
        f"{d['name']} <{d['email']}> ({'verified' if d['email_verified'] else 'not verified'})",
        f"id: {d['id']}",
        f"role: {d['role']}, membership: {d['tier']}"
        + (f", SUSPENDED since {d['suspended_at']}" if d["suspended_at"] else ""),
        "two-step sign-in: "
        + (
            f"{', '.join(d['two_step_methods'])}; {d['recovery_codes_left']} recovery codes left"
            if d["two_step_methods"]
            else "off"
        ),
        f"last sign-in: {d['last_sign_in'] or 'never'}",
        f"sessions: {len(d['sessions'])}",
    ]
    out += [f"  {s['browser']} from {s['ip'] or '?'}, last seen {s['last_seen_at']}" for s in d["sessions"]]
    out.append(f"connected apps: {len(d['connected_apps'])}")
    out += [f"  {c['name']} ({c['client_id']}): {' '.join(c['scopes'])}" for c in d["connected_apps"]]
    out.append(f"API keys: {len(d['api_keys'])}")
    out += [f"  {k['prefix']}...  {k['status']:<8} {k['name']}" for k in d["api_keys"]]
    out.append("recent events:")
    out += [f"  {e['at']}  {e['what']}" for e in d["recent_events"]] or ["  none"]
    return "\n".join(out)


@users.command("create")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--tier", type=click.Choice([t.value for t in Tier]), default=Tier.BASIC.value, show_default=True)
@click.option("--admin", is_flag=True, help="Give the member the admin role.")
@click.option("--role", type=click.Choice([r.value for r in Role]), default=None, help="Role (overrides --admin).")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@click.option("--profile-id", default=None, help="Link the member to a catalog profile.")
@json_option
def users_create(
    email: str,
    name: str,
    tier: str,
    admin: bool,
    role: str | None,
    password_stdin: bool,
    profile_id: str | None,
    as_json: bool,
) -> None:
    """Create a member. Without --password-stdin the member gets an invitation mail with a link to
    choose a password (INVITATION_LIFETIME); with it, a link that verifies the address. Either way
    the address counts as verified only once the member opened the link."""
    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
    try:
        user = create_member(
            email,
            name,
            password,
            tier=tier,
            role=role or (Role.ADMIN if admin else Role.MEMBER),
            profile_id=profile_id,
        )
    except MemberError as exc:
        fail(str(exc))
    record("user.created", subject=user, role=user.role, tier=user.tier)
    mail = send_verification(user) if password_stdin else invite(user)
    db.session.commit()
    data = {
        "id": user.id,
        "sub": user.sub,
        "email": user.email,
        "tier": user.tier,
        "role": user.role,
        "profile_id": user.profile_id,
        "email_verified": False,
        ("verification_sent_to" if password_stdin else "invitation_sent_to"): user.email,
    }
    _deliver(mail, user.email)
    emit(data, as_json, _every_field)


@users.command("invite")
@click.argument("email")
@json_option
def users_invite(email: str, as_json: bool) -> None:
    """Send a member a new invitation (a link to choose a password); older links stop working."""
    user = _member(email)
    mail = invite(user)
    db.session.commit()
    _deliver(mail, user.email)
    emit({"id": user.id, "email": user.email, "invitation_sent_to": user.email}, as_json, _every_field)


@users.command("set-role")
@click.argument("email")
@click.argument("role", type=click.Choice([r.value for r in Role]))
@json_option
def users_set_role(email: str, role: str, as_json: bool) -> None:
    """Give a member the role member, developer (owns apps in the console) or admin."""
    user = _member(email)
    before = user.role
    try:
        set_role(user, role)
    except MemberError as exc:
        fail(str(exc))
    db.session.commit()
    emit({"id": user.id, "email": user.email, "role": user.role, "previous_role": before}, as_json, fields)


@users.command("suspend")
@click.argument("email")
@click.option("--reason", default=None, help="Why (kept in the audit trail).")
@json_option
def users_suspend(email: str, reason: str | None, as_json: bool) -> None:
    """Suspend a member: sign-in refused, every session ended, every app's tokens revoked."""
    user = _member(email)
    ended = suspend_member(user, reason=reason)
    db.session.commit()
    emit({"id": user.id, "email": user.email, "suspended": True, **ended}, as_json, fields)


@users.command("unsuspend")
@click.argument("email")
@json_option
def users_unsuspend(email: str, as_json: bool) -> None:
    """Lift a member's suspension: they may sign in again."""
    user = _member(email)
    changed = unsuspend_member(user)
    db.session.commit()
    emit({"id": user.id, "email": user.email, "suspended": False, "changed": changed}, as_json, fields)


@users.command("remove-second-factor")
@click.argument("email")
@json_option
def users_remove_second_factor(email: str, as_json: bool) -> None:
    """Support: turn a member's two-step verification off (lost phone, recovery codes and passkeys),
    after checking who they are by other means. Sign-in then asks for the password only."""
    from app.services.passkeys import passkeys_of
    from app.services.passkeys import remove as remove_passkey
    from app.services.second_factor import remove_totp

    user = _member(email)
    removed = remove_totp(user, actor=None)
    passkeys_removed = sum(remove_passkey(user, p.id, actor=None) for p in passkeys_of(user))
    db.session.commit()
    if removed or passkeys_removed:
        from app.services.notices import security_notice

        try:
            deliver(security_notice(user, "Support turned your two-step verification off"))
        except Exception as exc:  # the change is made; the notice is a courtesy
            click.echo(f"warning: the notice to {user.email} was not sent ({type(exc).__name__})", err=True)
    emit(
        {"id": user.id, "email": user.email, "removed": removed, "passkeys_removed": passkeys_removed}, as_json, fields
    )


@users.command("set-password")
@click.argument("email")
@click.option("--password-stdin", is_flag=True, help="Read the new password from standard input.")
@click.option("--disconnect-apps", is_flag=True, help="Also revoke every app's consent and tokens (a compromise).")
@json_option
def users_set_password(email: str, password_stdin: bool, disconnect_apps: bool, as_json: bool) -> None:
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
    emit(data, as_json, fields)


@users.command("set-tier")
@click.argument("email")
@click.argument("tier", type=click.Choice([t.value for t in Tier]))
@json_option
def users_set_tier(email: str, tier: str, as_json: bool) -> None:
    """Change a member's membership (basic or pro); a downgrade applies to existing tokens at once."""
    user = _member(email)
    before = user.tier
    set_tier(user, tier)
    db.session.commit()
    emit({"id": user.id, "email": user.email, "tier": user.tier, "previous_tier": before}, as_json, fields)
