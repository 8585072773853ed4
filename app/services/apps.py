"""Managing registered apps: who may touch which app, and each change with its audit event.

Shared by the console pages and the CLI, so a change made either way does the same thing.
Registration rules (redirect URIs, links, scopes) live in app.services.registration; this module adds
ownership, the app's life cycle (disable, enable, delete) and the audit trail.

Services: each change joins the caller's transaction with its audit row and never commits; the
console page or the command commits once, so a change and its audit row land together or not
at all. Refusals (NotAllowed, RegistrationError) are raised before anything is written."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import CursorResult, delete

from app.core.extensions import db
from app.models import ClientStatus, Consent, Role, User
from app.models.base import utcnow
from app.services.audit import record
from app.services.registration import NewClient, register_client, rotate_secret, update_client
from app.store import store
from app.store.apps import Owner, RegisteredApp


class AppNotFound(LookupError):
    """No app with that client id (or it was deleted)."""


class NotAllowed(PermissionError):
    """The signed-in member may not do this to that app."""


def can_manage(user: User, client: RegisteredApp) -> bool:
    """An admin manages every app; a developer only the apps they own."""
    return user.role == Role.ADMIN or (user.role == Role.DEVELOPER and client.owner_id == user.id)


def find_app(client_id: str, include_deleted: bool = False) -> RegisteredApp:
    """A registered app by its public client id; a deleted one only when `include_deleted` (its
    page stays readable, since it is still in the ledger, but nothing can be done to it)."""
    client = store().apps.registered((client_id or "")[:255])
    if client is None or (client.is_deleted and not include_deleted):
        raise AppNotFound(f"no application with client id {client_id}")
    return client


def app_for(user: User, client_id: str, include_deleted: bool = False) -> RegisteredApp:
    """The app, if `user` may manage it: AppNotFound (404) or NotAllowed (403) otherwise."""
    client = find_app(client_id, include_deleted)
    if not can_manage(user, client):
        raise NotAllowed("This application belongs to another developer.")
    return client


APPS_PAGE_SIZE = 25


@dataclass(frozen=True)
class AppPage:
    rows: list[tuple[RegisteredApp, Owner | None]]  # each app with its owner (None: registered on the command line)
    number: int
    has_next: bool


def apps_page(user: User, query: str = "", number: int = 1, size: int = APPS_PAGE_SIZE) -> AppPage:
    """The apps `user` may see, deleted ones included (they are still billed for the months they
    existed, so they stay in sight, marked deleted), oldest first. `query` matches part of the
    name or client id, and for admins part of the owner's email, in any case."""
    number = max(1, number)
    admin = user.role == Role.ADMIN
    rows = store().apps.with_owners(
        owner_id=None if admin else user.id,
        search=(query or "").strip()[:120],
        search_owner_email=admin,
        offset=(number - 1) * size,
        limit=size + 1,
    )
    return AppPage(rows=rows[:size], number=number, has_next=len(rows) > size)


def register_app(spec: NewClient, actor: User | None) -> tuple[RegisteredApp, str | None]:
    """Register an app (its secret is returned once). Only an admin may make it a trusted
    first-party app or turn PKCE off; a developer's app is owned by the developer. The app and
    its `app.registered` audit row join the caller's transaction; the caller commits them together."""
    if actor is not None and actor.role != Role.ADMIN:
        spec.owner_id = actor.id
        if spec.trusted or not spec.require_pkce:
            raise NotAllowed("Only an admin can mark an app as trusted or turn PKCE off.")
    client, secret = register_client(spec)
    record("app.registered", actor=actor, client=client, type=client.client_type)
    return client, secret


def edit_app(client: RegisteredApp, spec: NewClient, actor: User | None) -> list[str]:
    """Change details and URIs; returns what changed. The admin-only switches keep their value
    when a developer edits. A RegistrationError leaves the app untouched; the caller commits."""
    if actor is not None and actor.role != Role.ADMIN:
        spec.trusted, spec.require_pkce = client.trusted, client.require_pkce
    changed = update_client(client, spec)
    if changed:
        record("app.changed", actor=actor, client=client, fields=changed)
    return changed


def rotate_app_secret(client: RegisteredApp, actor: User | None, grace: timedelta | None = None) -> str:
    """A new secret, shown once. The old one stops at once, or at the end of `grace`. The new hash
    and the audit row join the caller's transaction (a RegistrationError writes neither)."""
    secret = rotate_secret(client, grace)
    record("app.secret_rotated", actor=actor, client=client, grace_seconds=int(grace.total_seconds()) if grace else 0)
    return secret


def acts_as_admin(actor: User | None) -> bool:
    """An administrator in the console, or the operator at the command line (no actor)."""
    return actor is None or actor.role == Role.ADMIN


def disable_app(client: RegisteredApp, actor: User | None) -> bool:
    """Suspend the app: authorize shows an error page and the token endpoint does not know it.
    Its tokens and unredeemed codes end for good, not just while it stays disabled: an app is
    disabled after a leak or abuse, and enabling it again must not bring back what may have been
    copied meanwhile. Members' consents are kept, so after it is enabled they sign in again
    without being asked again. Disabled by an administrator, only an administrator enables it
    again. False when it already was disabled. The caller commits."""
    if client.status == ClientStatus.DISABLED and (client.disabled_by_admin or not acts_as_admin(actor)):
        return False
    # Disabled by its developer, an administrator may still lock it (it stays disabled meanwhile).
    first = client.status != ClientStatus.DISABLED
    store().apps.set_status(client.id, ClientStatus.DISABLED, disabled_by_admin=acts_as_admin(actor))
    revoked = store().tokens.end_grants(client_id=client.id) if first else 0
    record("app.disabled", actor=actor, client=client, tokens_revoked=revoked)
    return True


def may_enable(client: RegisteredApp, actor: User | None) -> bool:
    return not client.disabled_by_admin or acts_as_admin(actor)


def enable_app(client: RegisteredApp, actor: User | None) -> bool:
    """Let members sign in again. NotAllowed for a developer when an administrator disabled it
    (nothing changed then). The caller commits."""
    if client.status == ClientStatus.ACTIVE:
        return False
    if not may_enable(client, actor):
        raise NotAllowed("An administrator disabled this app: only an administrator can enable it again.")
    store().apps.set_status(client.id, ClientStatus.ACTIVE, disabled_by_admin=False)
    record("app.enabled", actor=actor, client=client)
    return True


def delete_app(client: RegisteredApp, actor: User | None) -> dict[str, int]:
    """Delete the app: every token it holds is revoked and every consent given to it removed,
    in one transaction, the caller's (it commits). The row is kept (status `deleted`, secrets
    erased) for the fee ledger and the audit trail, and so its client id is never reused."""
    now = utcnow()
    revoked = store().tokens.end_grants(client_id=client.id)
    removed: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]  # DML has a rowcount
        delete(Consent).where(Consent.client_id == client.id).execution_options(synchronize_session=False)
    )
    consents = removed.rowcount
    store().apps.mark_deleted(client.id, now)
    record("app.deleted", actor=actor, client=client, tokens_revoked=revoked, consents_removed=consents)
    return {"tokens_revoked": revoked, "consents_removed": consents}
