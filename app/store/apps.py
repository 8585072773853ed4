"""Registered apps: the `App` the protocol reads (once per request at most; on PostgreSQL, not at
all while the process keeps a good copy: app/store/postgresql.py), and the register the console,
the command line, the account page and the fee ledger manage (`RegisteredApp`).

The records carry the same rules as the ORM model (`ClientRules`: redirect URI matching, secret
check, auth method), so Authlib, the authorization endpoint and the token endpoint ask them exactly
what the console's model would answer. Every write is one statement that hands back the row as it
now is (`... RETURNING`), in the caller's transaction."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Label, Select, bindparam, func, or_, select

from app.models import AuditEvent, Client, ClientStatus, Consent, Registration, User
from app.models.client import ClientRules
from app.store.statements import first, run
from app.store.unit_of_work import unit_of_work

_clients, _users, _consents, _events = Client.__table__, User.__table__, Consent.__table__, AuditEvent.__table__

Key = tuple[str, Any]  # ("client_id", ...) or ("id", ...): how a request's lookups find an app again


class ClientIdTaken(LookupError):
    """A metadata document's URL is already the client id of an app registered another way."""


@dataclass(frozen=True, eq=False)
class App(ClientRules):
    """A registered app, read-only: what sign-in, consent, logout and the token endpoint need."""

    id: int
    client_id: str
    client_secret_hash: str | None
    previous_secret_hash: str | None
    previous_secret_expires_at: datetime | None
    name: str
    client_type: str
    token_endpoint_auth_method: str
    redirect_uris: list[str]
    post_logout_redirect_uris: list[str]
    allowed_scopes: str
    require_pkce: bool
    trusted: bool
    homepage_url: str | None
    logo_url: str | None
    policy_url: str | None
    tos_url: str | None
    status: str
    registration: str  # Registration: a developer's app, or an agent known by its metadata document
    document_fetched_at: datetime | None  # an agent's document, when last read

    @property
    def is_agent(self) -> bool:
        """An AI agent known by its Client ID Metadata Document or registered by itself (RFC 7591),
        rather than registered by a developer: its name and redirect URIs are its own word,
        unverified (the consent page says so), and nobody is billed for it."""
        return self.registration != Registration.CONSOLE

    @property
    def document_url(self) -> str | None:
        """Where an agent's metadata document lives (its client id), if it is known by one."""
        return self.client_id if self.registration == Registration.METADATA_DOCUMENT else None

    def __repr__(self) -> str:
        return f"<App {self.client_id}>"


APP_COLUMNS = [_clients.c[name].label(f"app_{name}") for name in App.__dataclass_fields__]
_APP_BY_CLIENT_ID = select(*APP_COLUMNS).where(_clients.c.client_id == bindparam("client_id"))
_APP_BY_ID = select(*APP_COLUMNS).where(_clients.c.id == bindparam("id"))


def app_from(row: Any) -> App:
    """The App of a row selected with APP_COLUMNS (alone or beside another table's columns)."""
    return App(*(getattr(row, f"app_{name}") for name in App.__dataclass_fields__))


@dataclass(frozen=True, eq=False)
class RegisteredApp(App):
    """A registered app, read-only, with what the console, the CLI and the ledger show of it."""

    owner_id: str | None
    disabled_by_admin: bool
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    def __repr__(self) -> str:
        return f"<RegisteredApp {self.client_id}>"


@dataclass(frozen=True, slots=True)
class Owner:
    """The member who owns an app (a developer), as the app lists name them."""

    id: str
    email: str


FIELDS = tuple(RegisteredApp.__dataclass_fields__)
_COLUMNS = [_clients.c[name] for name in FIELDS]
_LABELLED = [_clients.c[name].label(f"app_{name}") for name in FIELDS]
_OWNER_EMAIL = _users.c.email.label("owner_email")

_BY_CLIENT_ID = select(*_LABELLED).where(_clients.c.client_id == bindparam("client_id"))
_BY_ID = select(*_LABELLED).where(_clients.c.id == bindparam("id"))
_WITH_OWNER = select(*_LABELLED, _OWNER_EMAIL).outerjoin_from(_clients, _users, _users.c.id == _clients.c.owner_id)
_OLDEST_FIRST = (_clients.c.created_at, _clients.c.id)


def _labelled(row: Any) -> RegisteredApp:
    return RegisteredApp(*(getattr(row, f"app_{name}") for name in FIELDS))


def _returned(row: Any) -> RegisteredApp:
    """The record of a row an INSERT or UPDATE handed back (its columns unlabelled)."""
    assert row is not None  # one row, found by its primary key
    return RegisteredApp(*(getattr(row, name) for name in FIELDS))


def _with_owner(row: Any) -> tuple[RegisteredApp, Owner | None]:
    app = _labelled(row)
    return app, (Owner(app.owner_id, row.owner_email) if app.owner_id and row.owner_email is not None else None)


def _changed(pk: int, values: dict[str, Any]) -> RegisteredApp:
    """Write `values` to the app's row and return it as it now is. The request's own memory of the
    app is dropped, so a later lookup in this request reads the change."""
    row = run(_clients.update().where(_clients.c.id == pk).values(**values).returning(*_COLUMNS)).first()
    app = _returned(row)
    memo = unit_of_work().memo
    memo.pop(("id", app.id), None)
    memo.pop(("client_id", app.client_id), None)
    return app


# -- one app ----------------------------------------------------------------------------------


class SqlApps:
    """Registered apps, in SQL: the protocol's reads and the register."""

    # -- as the protocol reads them: once per request at most ------------------------------------

    def by_client_id(self, client_id: str | None) -> App | None:
        """An app by its public id, active or not. Authlib validates an authorization request twice
        (consent step and response), and /authorize checks trust first: the request reads it once."""
        if not client_id or len(client_id) > 255 or "\x00" in client_id:
            return None
        return self._remembered(("client_id", client_id), _APP_BY_CLIENT_ID, {"client_id": client_id})

    def by_id(self, pk: int) -> App | None:
        """An app by its row id (a pending request names its app this way), read once per request."""
        return self._remembered(("id", pk), _APP_BY_ID, {"id": pk})

    def _remembered(self, key: Key, statement: Select[Any], params: dict[str, Any]) -> App | None:
        memo = unit_of_work().memo
        app = memo.get(key)
        if app is None:
            app = self._read(key, statement, params)
            if app is not None:
                self.remember(app)
        return app

    def _read(self, key: Key, statement: Select[Any], params: dict[str, Any]) -> App | None:
        row = first(statement, params)
        return None if row is None else app_from(row)

    def remember(self, app: App) -> None:
        """Keep `app` for the rest of the request (a query that read it beside another row)."""
        memo = unit_of_work().memo
        memo[("id", app.id)] = memo[("client_id", app.client_id)] = app

    # -- the register -------------------------------------------------------------------------

    def registered(self, client_id: str) -> RegisteredApp | None:
        """An app by its public client id, whatever its status."""
        row = run(_BY_CLIENT_ID, {"client_id": client_id}).first()
        return None if row is None else _labelled(row)

    def registered_by_id(self, pk: int) -> RegisteredApp | None:
        """An app by its row id, whatever its status."""
        row = run(_BY_ID, {"id": pk}).first()
        return None if row is None else _labelled(row)

    def by_ids(self, ids: Collection[int]) -> dict[int, RegisteredApp]:
        """The apps with these row ids (those that exist), by row id, in one query."""
        if not ids:
            return {}
        rows = run(select(*_LABELLED).where(_clients.c.id.in_(set(ids))))
        return {app.id: app for app in map(_labelled, rows)}

    def insert(self, values: dict[str, Any]) -> RegisteredApp:
        """Register an app (`values`: its columns, the secret as a hash only); returns it as stored,
        with the columns' defaults (status active, registered now)."""
        row = run(_clients.insert().values(**values).returning(*_COLUMNS)).first()
        return _returned(row)

    def keep_agent(self, client_id: str, values: dict[str, Any]) -> RegisteredApp:
        """An agent known by its metadata document (`client_id`: the document's URL), its row
        refreshed with what the document says now (`values`), or inserted the first time. Its
        status is left as it is: an agent an administrator disabled stays disabled."""
        agent = Registration.METADATA_DOCUMENT.value
        stmt = (
            _clients.update()
            .where(_clients.c.client_id == client_id, _clients.c.registration == agent)
            .values(**values)
            .returning(*_COLUMNS)
        )
        row = run(stmt).first()
        if row is None:
            if self.registered(client_id) is not None:
                raise ClientIdTaken(client_id)  # an app registered another way holds this id
            return self.insert({**values, "client_id": client_id, "registration": agent})
        memo = unit_of_work().memo
        memo.pop(("id", row.id), None)
        memo.pop(("client_id", client_id), None)
        return _returned(row)

    def change(self, pk: int, values: dict[str, Any]) -> RegisteredApp:
        """Change an app's details (name, URIs, links, scopes, switches)."""
        return _changed(pk, values)

    def replace_secret_hash(self, pk: int, secret_hash: str, previous_expires_at: datetime | None) -> RegisteredApp:
        """A new secret (its hash). With `previous_expires_at` the secret it replaces keeps working
        until then (read from the row by the same statement); without it, the replaced one and any
        older one stop at once."""
        return _changed(
            pk,
            {
                "client_secret_hash": secret_hash,
                "previous_secret_hash": _clients.c.client_secret_hash if previous_expires_at is not None else None,
                "previous_secret_expires_at": previous_expires_at,
            },
        )

    def set_status(self, pk: int, status: ClientStatus, disabled_by_admin: bool) -> RegisteredApp:
        """Disable or enable an app (and say whether an administrator disabled it)."""
        return _changed(pk, {"status": status.value, "disabled_by_admin": disabled_by_admin})

    def mark_deleted(self, pk: int, at: datetime) -> RegisteredApp:
        """Delete an app: the row stays (the ledger and the audit trail keep it, its client id is never
        handed out again), marked deleted, its secrets erased."""
        return _changed(
            pk,
            {
                "status": ClientStatus.DELETED.value,
                "deleted_at": at,
                "client_secret_hash": None,
                "previous_secret_hash": None,
                "previous_secret_expires_at": None,
            },
        )

    def with_owners(
        self,
        *,
        owner_id: str | None = None,
        search: str = "",
        search_owner_email: bool = False,
        offset: int = 0,
        limit: int,
    ) -> list[tuple[RegisteredApp, Owner | None]]:
        """Apps (deleted ones included), oldest first, each with its owner (None: registered on the
        command line). `owner_id` keeps one owner's; `search` matches part of the name or client id
        (and of the owner's email with `search_owner_email`), in any case."""
        stmt = _WITH_OWNER.order_by(*_OLDEST_FIRST)
        if owner_id is not None:
            stmt = stmt.where(_clients.c.owner_id == owner_id)
        if search:
            matches: list[ColumnElement[bool]] = [
                _clients.c.name.icontains(search, autoescape=True),
                _clients.c.client_id.icontains(search, autoescape=True),
            ]
            if search_owner_email:
                matches.append(_users.c.email.icontains(search, autoescape=True))
            stmt = stmt.where(or_(*matches))
        return [_with_owner(row) for row in run(stmt.offset(offset).limit(limit))]

    def matching_ids(self, text: str, *, owner_id: str | None = None, limit: int) -> tuple[int, ...]:
        """Row ids of the apps whose client id is `text`, or whose name or client id contains it (one
        owner's when `owner_id` is given)."""
        stmt = select(_clients.c.id).where(
            or_(
                _clients.c.client_id == text[:64],
                _clients.c.name.icontains(text, autoescape=True),
                _clients.c.client_id.icontains(text, autoescape=True),
            )
        )
        if owner_id is not None:
            stmt = stmt.where(_clients.c.owner_id == owner_id)
        return tuple(run(stmt.limit(limit)).scalars())

    def registered_during(
        self, start: datetime, end: datetime, owner_id: str | None = None
    ) -> list[tuple[RegisteredApp, Owner | None]]:
        """Apps registered for some of [start, end) - created before its end, not deleted before its
        start - oldest first, each with its owner (what the fee ledger bills). Registered apps only:
        an agent known by its metadata document has no developer to bill."""
        stmt = (
            _WITH_OWNER.where(_clients.c.created_at < end, _clients.c.registration == Registration.CONSOLE.value)
            .where(or_(_clients.c.deleted_at.is_(None), _clients.c.deleted_at > start))
            .order_by(*_OLDEST_FIRST)
        )
        if owner_id is not None:
            stmt = stmt.where(_clients.c.owner_id == owner_id)
        return [_with_owner(row) for row in run(stmt)]

    def listed(self) -> list[RegisteredApp]:
        """Every app not deleted, oldest first."""
        stmt = select(*_LABELLED).where(_clients.c.status != ClientStatus.DELETED.value).order_by(_clients.c.created_at)
        return [_labelled(row) for row in run(stmt)]

    def busiest(self, action: str, since: datetime, limit: int) -> list[tuple[RegisteredApp, int]]:
        """The apps with the most audit events of `action` since `since`, most first, with their count."""
        n: Label[int] = func.count(_events.c.id).label("n")
        stmt = (
            select(*_LABELLED, n)
            .join_from(_clients, _events, _events.c.client_id == _clients.c.id)
            .where(_events.c.action == action, _events.c.created_at >= since)
            .group_by(_clients.c.id)
            .order_by(n.desc(), _clients.c.id)
            .limit(limit)
        )
        return [(_labelled(row), int(row.n)) for row in run(stmt)]

    def consented(self, user_id: str) -> list[tuple[RegisteredApp, str, datetime]]:
        """The apps (not deleted) a member consented to, each with the scope granted and when."""
        stmt = (
            select(*_LABELLED, _consents.c.scope, _consents.c.granted_at)
            .join_from(_consents, _clients, _consents.c.client_id == _clients.c.id)
            .where(_consents.c.user_id == user_id, _clients.c.status != ClientStatus.DELETED.value)
        )
        return [(_labelled(row), row.scope, row.granted_at) for row in run(stmt)]


# -- lists ------------------------------------------------------------------------------------
