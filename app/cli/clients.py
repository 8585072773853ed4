"""`flask clients create|list|show|update|rotate-secret|disable|enable|delete`: registered applications, from
the command line. The same services and audit trail as the console's app pages (source `cli`);
each command commits once, after the service and its audit row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from app.cli.output import CommandGroup, emit, fail, fields, grace_option, json_option, scope_option
from app.core.capabilities import DEFAULT_SECRET_AUTH_METHOD, SECRET_AUTH_METHODS
from app.core.extensions import db
from app.models import User
from app.services.apps import (
    AppNotFound,
    delete_app,
    disable_app,
    edit_app,
    enable_app,
    find_app,
    register_app,
    rotate_app_secret,
)
from app.services.fees import CURRENCY, MONTHLY_FEE
from app.services.registration import MAX_SECRET_GRACE, NewClient, RegistrationError
from app.store import store
from app.store.apps import RegisteredApp

clients = CommandGroup("clients", help="Registered applications (OAuth clients).")


def _app(client_id: str, include_deleted: bool = False) -> RegisteredApp:
    try:
        return find_app(client_id, include_deleted)
    except AppNotFound as exc:
        fail(str(exc))


def _refused(exc: RegistrationError) -> str:
    """A registration refusal with each field's problems, as the console shows them."""
    details = "; ".join(f"{name}: {' '.join(problems)}" for name, problems in (exc.fields or {}).items())
    return f"{exc}{f' ({details})' if details and details not in str(exc) else ''}"


@clients.command("create")
@click.option("--name", required=True)
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True, help="Repeat for several.")
@click.option("--post-logout-redirect-uri", "logout_uris", multiple=True)
@click.option("--public", is_flag=True, help="A public client (native or browser app): no secret, PKCE.")
@click.option(
    "--auth-method", type=click.Choice(SECRET_AUTH_METHODS), default=DEFAULT_SECRET_AUTH_METHOD, show_default=True
)
@scope_option
@click.option("--trusted", is_flag=True, help="First-party app: consent is skipped.")
@click.option("--no-pkce", is_flag=True, help="Do not require PKCE (confidential legacy apps only).")
@click.option("--client-id", default=None, help="Choose the client id (default: random).")
@json_option
def clients_create(
    name: str,
    redirect_uris: tuple[str, ...],
    logout_uris: tuple[str, ...],
    public: bool,
    auth_method: str,
    scope: str | None,
    trusted: bool,
    no_pkce: bool,
    client_id: str | None,
    as_json: bool,
) -> None:
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
        fail(_refused(exc))
    db.session.commit()
    data = {
        "client_id": client.client_id,
        "client_secret": secret,
        "name": client.name,
        "type": client.client_type,
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "redirect_uris": client.redirect_uris,
        "scope": client.allowed_scopes,
        "monthly_fee": MONTHLY_FEE,
        "currency": CURRENCY,
    }
    emit(
        data,
        as_json,
        lambda d: (
            fields(d)
            + ("\n(the secret is shown only now)" if secret else "")
            + f"\nThe registration fee is {MONTHLY_FEE} {CURRENCY} a month while the app is registered,"
            " from this month on (`flask fees report`)."
        ),
    )


def _described(client: RegisteredApp) -> dict[str, Any]:
    owner = db.session.get(User, client.owner_id) if client.owner_id else None
    return {
        "client_id": client.client_id,
        "name": client.name,
        "type": client.client_type,
        "status": client.status,
        "owner": owner.email if owner else None,
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "redirect_uris": client.redirect_uris,
        "post_logout_redirect_uris": client.post_logout_redirect_uris,
        "scope": client.allowed_scopes,
        "trusted": client.trusted,
        "require_pkce": client.require_pkce,
        "homepage_url": client.homepage_url,
        "logo_url": client.logo_url,
        "policy_url": client.policy_url,
        "tos_url": client.tos_url,
        "created_at": client.created_at.isoformat(),
        "updated_at": client.updated_at.isoformat(),
        "deleted_at": client.deleted_at.isoformat() if client.deleted_at else None,
        "monthly_fee": MONTHLY_FEE,
        "currency": CURRENCY,
    }


def _human_app(d: dict[str, Any]) -> str:
    lines = []
    for key, value in d.items():
        if value is None or value == []:
            continue
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines += [f"  {v}" for v in value]
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


@clients.command("show")
@click.argument("client_id")
@json_option
def clients_show(client_id: str, as_json: bool) -> None:
    """One application: everything registered for it (never its secret, which is not stored)."""
    emit(_described(_app(client_id, include_deleted=True)), as_json, _human_app)


@clients.command("update")
@click.argument("client_id")
@click.option("--name", default=None, help="A new name.")
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="Replaces every redirect URI; repeat for several.")
@click.option(
    "--post-logout-redirect-uri", "logout_uris", multiple=True, help="Replaces every post-logout URI; repeat."
)
@click.option("--no-post-logout-redirect-uris", "clear_logout_uris", is_flag=True, help="Remove every post-logout URI.")
@scope_option
@json_option
def clients_update(
    client_id: str,
    name: str | None,
    redirect_uris: tuple[str, ...],
    logout_uris: tuple[str, ...],
    clear_logout_uris: bool,
    scope: str | None,
    as_json: bool,
) -> None:
    """Change an app's name, redirect URIs or scopes, under the registration's rules (what is not
    given stays as it is). Audited as `app.changed`."""
    client = _app(client_id)
    if not (name or redirect_uris or logout_uris or clear_logout_uris or scope):
        fail("nothing to change: give --name, --redirect-uri, --post-logout-redirect-uri or --scope")
    if logout_uris and clear_logout_uris:
        fail("give --post-logout-redirect-uri or --no-post-logout-redirect-uris, not both")
    spec = NewClient(
        name=name if name is not None else client.name,
        redirect_uris=list(redirect_uris) or list(client.redirect_uris),
        post_logout_redirect_uris=[]
        if clear_logout_uris
        else list(logout_uris) or list(client.post_logout_redirect_uris),
        public=client.is_public,
        auth_method=client.token_endpoint_auth_method,
        scope=scope if scope is not None else client.allowed_scopes,
        trusted=client.trusted,
        require_pkce=client.require_pkce,
        owner_id=client.owner_id,
        homepage_url=client.homepage_url,
        logo_url=client.logo_url,
        policy_url=client.policy_url,
        tos_url=client.tos_url,
    )
    try:
        changed = edit_app(client, spec, actor=None)
    except RegistrationError as exc:
        fail(_refused(exc))
    db.session.commit()
    data = {**_described(_app(client_id)), "changed": changed}
    emit(data, as_json, lambda d: _human_app(d) if changed else f"{client_id}: nothing changed")


@clients.command("list")
@json_option
def clients_list(as_json: bool) -> None:
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
def clients_rotate_secret(client_id: str, grace: timedelta | None, as_json: bool) -> None:
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
def clients_disable(client_id: str, as_json: bool) -> None:
    """Disable an app: sign-ins show an error page and its tokens are refused until enabled."""
    client = _app(client_id)
    changed = disable_app(client, actor=None)
    db.session.commit()
    _emit_status(client_id, changed, as_json)


@clients.command("enable")
@click.argument("client_id")
@json_option
def clients_enable(client_id: str, as_json: bool) -> None:
    """Enable a disabled app again."""
    client = _app(client_id)
    changed = enable_app(client, actor=None)
    db.session.commit()
    _emit_status(client_id, changed, as_json)


@clients.command("delete")
@click.argument("client_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def clients_delete(client_id: str, yes: bool, as_json: bool) -> None:
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
