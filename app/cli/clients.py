"""`flask clients create|list|rotate-secret|disable|enable|delete`: registered applications, from
the command line. The same services and audit trail as the console's app pages (source `cli`);
each command commits once, after the service and its audit row."""

from __future__ import annotations

import click

from app.cli.output import CommandGroup, emit, fail, fields, grace_option, json_option
from app.core.capabilities import DEFAULT_SECRET_AUTH_METHOD, SECRET_AUTH_METHODS
from app.core.extensions import db
from app.services.apps import (
    AppNotFound,
    delete_app,
    disable_app,
    enable_app,
    find_app,
    register_app,
    rotate_app_secret,
)
from app.services.registration import MAX_SECRET_GRACE, NewClient, RegistrationError
from app.store import store
from app.store.apps import RegisteredApp

clients = CommandGroup("clients", help="Registered applications (OAuth clients).")


def _app(client_id: str, include_deleted: bool = False) -> RegisteredApp:
    try:
        return find_app(client_id, include_deleted)
    except AppNotFound as exc:
        fail(str(exc))


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
    if client_id and store().apps.registered(client_id) is not None:
        fail(f"client id {client_id} is taken")
    try:
        client, secret = register_app(spec, actor=None)  # same rules as register_client, plus the audit trail
    except RegistrationError as exc:
        fail(str(exc))
    db.session.commit()
    data = {
        "client_id": client.client_id,
        "client_secret": secret,
        "name": client.name,
        "type": client.client_type,
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "redirect_uris": client.redirect_uris,
        "scope": client.allowed_scopes,
    }
    emit(data, as_json, lambda d: fields(d) + ("\n(the secret is shown only now)" if secret else ""))


@clients.command("list")
@json_option
def clients_list(as_json):
    """Every registered application (deleted ones are left out; the fee ledger keeps them)."""
    rows = store().apps.listed()
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
    db.session.commit()
    client = _app(client_id)  # as it now is: until when the previous secret works
    data = {
        "client_id": client.client_id,
        "client_secret": secret,
        "previous_secret_valid_until": client.previous_secret_expires_at.isoformat()
        if client.previous_secret_expires_at
        else None,
    }
    emit(data, as_json, lambda d: fields(d) + "\n(the secret is shown only now)")


def _emit_status(client_id: str, changed: bool, as_json: bool) -> None:
    """An app's status after `disable` or `enable`, read back, and whether the command changed it."""
    client = _app(client_id)
    emit(
        {"client_id": client.client_id, "status": client.status, "changed": changed},
        as_json,
        lambda d: f"{d['client_id']} is {d['status']}" + ("" if d["changed"] else " (it already was)"),
    )


@clients.command("disable")
@click.argument("client_id")
@json_option
def clients_disable(client_id, as_json):
    """Disable an app: sign-ins show an error page and its tokens are refused until enabled."""
    client = _app(client_id)
    changed = disable_app(client, actor=None)
    db.session.commit()
    _emit_status(client_id, changed, as_json)


@clients.command("enable")
@click.argument("client_id")
@json_option
def clients_enable(client_id, as_json):
    """Enable a disabled app again."""
    client = _app(client_id)
    changed = enable_app(client, actor=None)
    db.session.commit()
    _emit_status(client_id, changed, as_json)


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
    db.session.commit()
    client = _app(client_id, include_deleted=True)  # as it now is
    emit(
        {"client_id": client.client_id, "status": client.status, **counts},
        as_json,
        lambda d: (
            f"deleted {d['client_id']}: {d['tokens_revoked']} tokens revoked, {d['consents_removed']} consents removed"
        ),
    )
