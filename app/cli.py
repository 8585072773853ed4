"""`flask` commands for scripts and admins. Every command can answer in JSON (`--json`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import timedelta

import click
from flask import Flask
from flask.cli import AppGroup

from app.audit import record
from app.auth.verification import invite, send_verification
from app.capabilities import DEFAULT_SECRET_AUTH_METHOD, SECRET_AUTH_METHODS
from app.console.apps import register_app
from app.extensions import db
from app.jwks import KeyStoreError, keystore
from app.mail import deliver
from app.members import MemberError, create_member, find_member
from app.models import Client, ClientStatus, Role, Tier
from app.registration import NewClient, RegistrationError

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def grace_option(maximum: timedelta, what: str) -> Callable:
    """`--grace SECONDS` of a rotation: how long the old `what` keeps working, handed to the command
    as a timedelta (None: it stops at once)."""
    return click.option(
        "--grace",
        type=click.IntRange(0, int(maximum.total_seconds())),
        default=0,
        show_default=True,
        callback=lambda ctx, param, seconds: timedelta(seconds=seconds) if seconds else None,
        help=f"Seconds the old {what} keeps working (0: it stops at once; at most {maximum.days} days).",
    )


def emit(data, as_json: bool, human: Callable[[object], str]) -> None:
    click.echo(json.dumps(data, indent=2, default=str) if as_json else human(data))


def fail(message: str) -> None:
    raise click.ClickException(message)


users = AppGroup("users", help="Members of the platform.")
clients = AppGroup("clients", help="Registered applications (OAuth clients).")
keys = AppGroup("keys", help="ID-token signing keys.")
demo = AppGroup("demo", help="Demo data for a local run.")


@users.command("create")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--tier", type=click.Choice([t.value for t in Tier]), default=Tier.BASIC.value, show_default=True)
@click.option("--admin", is_flag=True, help="Give the member the admin role.")
@click.option("--role", type=click.Choice([r.value for r in Role]), default=None, help="Role (overrides --admin).")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@click.option("--profile-id", default=None, help="Link the member to a catalog profile.")
@json_option
def users_create(email, name, tier, admin, role, password_stdin, profile_id, as_json):
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
            commit=False,
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
    emit(data, as_json, lambda d: "\n".join(f"{k}: {v}" for k, v in d.items()))


@users.command("invite")
@click.argument("email")
@json_option
def users_invite(email, as_json):
    """Send a member a new invitation (a link to choose a password); older links stop working."""
    try:
        user = find_member(email)
    except MemberError as exc:
        fail(str(exc))
    mail = invite(user)
    db.session.commit()
    _deliver(mail, user.email)
    emit(
        {"id": user.id, "email": user.email, "invitation_sent_to": user.email},
        as_json,
        lambda d: "\n".join(f"{k}: {v}" for k, v in d.items()),
    )


def _deliver(mail, email: str) -> None:
    """Send now, and tell the operator if the mail server refused (the member exists either way)."""
    from flask import current_app

    if mail is None:
        return
    try:
        deliver(mail, current_app)
    except Exception as exc:
        fail(
            f"the mail to {email} was not sent ({type(exc).__name__}: {exc}); "
            f"send another with: flask users invite {email}"
        )


@clients.command("create")
@click.option("--name", required=True)
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True, help="Repeat for several.")
@click.option("--post-logout-redirect-uri", "logout_uris", multiple=True)
@click.option("--public", is_flag=True, help="A public client (native or browser app): no secret, PKCE.")
@click.option(
    "--auth-method", type=click.Choice(SECRET_AUTH_METHODS), default=DEFAULT_SECRET_AUTH_METHOD, show_default=True
)
@click.option("--scope", default=None, help="Allowed scopes (space-separated); default: all.")
@click.option("--trusted", is_flag=True, help="First-party app: consent is skipped.")
@click.option("--no-pkce", is_flag=True, help="Do not require PKCE (confidential legacy apps only).")
@click.option("--client-id", default=None, help="Choose the client id (default: random).")
@json_option
def clients_create(name, redirect_uris, logout_uris, public, auth_method, scope, trusted, no_pkce, client_id, as_json):
    """Register an application. Its secret is printed once; only a hash is stored."""
    spec = NewClient(
        name=name,
        redirect_uris=list(redirect_uris),
        post_logout_redirect_uris=list(logout_uris),
        public=public,
        auth_method=auth_method,
        trusted=trusted,
        require_pkce=not no_pkce,
        client_id=client_id,
    )
    if scope is not None:
        spec.scope = scope
    if client_id and db.session.scalar(db.select(Client.id).where(Client.client_id == client_id)):
        fail(f"client id {client_id} is taken")
    try:
        client, secret = register_app(spec, actor=None)  # same rules as register_client, plus the audit trail
    except RegistrationError as exc:
        fail(str(exc))
    data = {
        "client_id": client.client_id,
        "client_secret": secret,
        "name": client.name,
        "type": client.client_type,
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "redirect_uris": client.redirect_uris,
        "scope": client.allowed_scopes,
    }
    emit(
        data,
        as_json,
        lambda d: (
            "\n".join(f"{k}: {v}" for k, v in d.items() if v is not None)
            + ("\n(the secret is shown only now)" if secret else "")
        ),
    )


@clients.command("list")
@json_option
def clients_list(as_json):
    """Every registered application (deleted ones are left out; the fee ledger keeps them)."""
    rows = db.session.scalars(
        db.select(Client).where(Client.status != ClientStatus.DELETED).order_by(Client.created_at)
    ).all()
    data = [
        {
            "client_id": c.client_id,
            "name": c.name,
            "type": c.client_type,
            "status": c.status,
            "redirect_uris": c.redirect_uris,
            "created_at": c.created_at.isoformat(),
        }
        for c in rows
    ]
    emit(
        data,
        as_json,
        lambda d: (
            "\n".join(
                f"{c['client_id']}  {c['type']:<12} {c['status']:<8} {c['name']}  {' '.join(c['redirect_uris'])}"
                for c in d
            )
            or "no applications"
        ),
    )


@keys.command("generate")
@json_option
def keys_generate(as_json):
    """Generate a signing key that signs at once (first set-up)."""
    row = keystore.generate()
    emit({"kid": row.kid, "alg": row.alg}, as_json, lambda d: f"generated {d['kid']} ({d['alg']})")


@keys.command("ensure")
@json_option
def keys_ensure(as_json):
    """Generate a signing key only when none can sign (idempotent; used by `make run`)."""
    row = keystore.ensure_key()
    data = {"generated": row.kid if row else None, "active": keystore.snapshot().signing_kid}
    emit(data, as_json, lambda d: f"generated {d['generated']}" if d["generated"] else f"active key {d['active']}")


@keys.command("rotate")
@click.option("--now", "immediate", is_flag=True, help="Sign with the new key at once (skip the publish delay).")
@json_option
def keys_rotate(immediate, as_json):
    """Publish a new key; it signs after KEY_PUBLISH_DELAY, and the old key retires then. With
    --now (an emergency) it signs at once, and a key still waiting from an earlier rotation is
    withdrawn."""
    try:
        row = keystore.rotate(immediate=immediate)
    except KeyStoreError as exc:
        fail(str(exc))
    emit(
        {"kid": row.kid, "activates_at": row.activates_at.isoformat()},
        as_json,
        lambda d: f"new key {d['kid']} signs from {d['activates_at']}",
    )


@keys.command("retire")
@click.argument("kid")
@json_option
def keys_retire(kid, as_json):
    """Stop signing with KID; it stays published until the tokens it signed expire."""
    try:
        row = keystore.retire(kid)
    except KeyStoreError as exc:
        fail(str(exc))
    emit(
        {"kid": row.kid, "expires_at": row.expires_at.isoformat()},
        as_json,
        lambda d: f"retired {d['kid']}; published until {d['expires_at']}",
    )


@keys.command("revoke")
@click.argument("kid")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def keys_revoke(kid, yes, as_json):
    """A leaked or lost key: stop signing with KID and unpublish it at once. ID tokens it signed
    stop verifying immediately (rotate with --now first if it is the active key)."""
    if not yes:
        click.confirm(f"Unpublish {kid} now? ID tokens it signed stop verifying at once.", abort=True)
    try:
        row = keystore.revoke(kid)
    except KeyStoreError as exc:
        fail(str(exc))
    emit(
        {"kid": row.kid, "expires_at": row.expires_at.isoformat()},
        as_json,
        lambda d: f"revoked {d['kid']}: no longer published",
    )


@keys.command("list")
@json_option
def keys_list(as_json):
    """Every key with its state (next, active, retired)."""
    data = keystore.describe()
    emit(
        data,
        as_json,
        lambda d: (
            "\n".join(f"{k['kid']}  {k['alg']}  {k['state']:<8} created {k['created_at']}" for k in d) or "no keys"
        ),
    )


@demo.command("seed")
@click.option("--seed", "catalog_seed", type=int, default=None, help="Seed of the demo catalog (same seed, same data).")
@click.option(
    "--credits",
    "credit_count",
    type=click.IntRange(min=100),
    default=None,
    help="Credit rows in the demo catalog (e.g. 100000 for benchmarks).",
)
@click.option("--rebuild", is_flag=True, help="Replace an existing catalog (members keep their accounts).")
@json_option
def demo_seed(catalog_seed, credit_count, rebuild, as_json):
    """Create (or refresh) the demo catalog, members and apps and print their credentials."""
    from app.catalog_seed import CatalogExists
    from app.demo import seed_accounts

    try:
        data = seed_accounts(catalog_seed=catalog_seed, credits=credit_count, rebuild=rebuild)
    except CatalogExists as exc:
        fail(str(exc))

    def human(d):
        c = d["catalog"]
        origin = f"seed {c['seed']}" if c["built"] else "kept"
        lines = [
            f"Demo catalog ({origin}): {c['profiles']} profiles, "
            f"{c['albums']} albums, {c['tracks']} tracks, {c['credits']} credits, {c['chart_rows']} chart rows"
        ]
        lines.append("Demo members (passwords shown once):")
        lines += [
            f"  {m['tier']:<5} {m['email']}  password: {m['password']}  profile: {m['profile_id']}"
            for m in d["members"]
        ]
        lines.append("Demo apps:")
        for a in d["apps"]:
            secret = f"  secret: {a['client_secret']}" if a["client_secret"] else "  (public: no secret)"
            lines.append(f"  {a['name']}: client_id {a['client_id']}{secret}")
            lines.append(f"      redirect URIs: {' '.join(a['redirect_uris'])}")
        dev = d["developer"]
        lines.append(f"Demo developer: {dev['email']}  password: {dev['password']}")
        lines.append(f"  secret API key ({dev['api_key_plan']}): {dev['api_key']}  (send it as x-api-key to /v1)")
        return "\n".join(lines)

    emit(data, as_json, human)


@click.command("purge-expired")
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=None, help="Rows per transaction (default: PURGE_BATCH_SIZE)."
)
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@json_option
def purge_expired_command(batch_size, dry_run, as_json):
    """Delete expired codes, tokens, sessions and pending sign-ins, and audit events past their
    retention (AUDIT_RETENTION_DAYS), in batches (safe while serving)."""
    from flask import current_app

    from app.housekeeping import count_expired, purge_expired

    if dry_run:
        data = {"dry_run": True, "expired": count_expired()}
    else:
        size = batch_size or int(current_app.config["PURGE_BATCH_SIZE"])
        data = {"dry_run": False, "deleted": purge_expired(size), "batch_size": size}
    counts = data["expired"] if dry_run else data["deleted"]
    verb = "would delete" if dry_run else "deleted"
    emit(data, as_json, lambda d: "\n".join(f"{verb} {n} {table}" for table, n in counts.items()))


def register_cli(app: Flask) -> None:
    from app.apikeys_cli import api_keys
    from app.console.commands import fees  # adds the console's commands to `clients` and `users`

    for group in (users, clients, keys, demo, fees, api_keys):
        app.cli.add_command(group)
    app.cli.add_command(purge_expired_command)
