"""An app as the protocol sees it: one Core query per request at most, a frozen record back
(on PostgreSQL, none while the process keeps a good copy: app/store/app_cache.py).

The record carries the same rules as the ORM model (`ClientRules`: redirect URI matching, secret
check, auth method), so Authlib, the authorization endpoint and the token endpoint ask it exactly
what the console's model would answer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import g
from sqlalchemy import Select, bindparam, select

from app.models.client import Client, ClientRules
from app.store.app_cache import Key, app_cache
from app.store.statements import first
from app.store.unit_of_work import has_written

_clients = Client.__table__


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

    def __repr__(self) -> str:
        return f"<App {self.client_id}>"


APP_COLUMNS = [_clients.c[name].label(f"app_{name}") for name in App.__dataclass_fields__]
_BY_CLIENT_ID = select(*APP_COLUMNS).where(_clients.c.client_id == bindparam("client_id"))
_BY_ID = select(*APP_COLUMNS).where(_clients.c.id == bindparam("id"))


def app_from(row: Any) -> App:
    """The App of a row selected with APP_COLUMNS (alone or beside another table's columns), kept
    for the rest of the request."""
    return _for_this_request(App(*(getattr(row, f"app_{name}") for name in App.__dataclass_fields__)))


def _for_this_request(app: App) -> App:
    g.setdefault("apps_by_id", {})[app.id] = app
    g.setdefault("apps_by_client_id", {})[app.client_id] = app
    return app


def _looked_up(key: Key, statement: Select[Any], params: dict[str, Any]) -> App | None:
    """The app under `key`: this process's copy where one is good (app/store/app_cache.py),
    else read from its row: committed, outside the request's session (read_row), and then kept,
    unless the request has written (it may have changed the app itself)."""
    cache = app_cache()
    kept = cache.get(key) if cache is not None else None
    if kept is not None:
        return _for_this_request(kept)
    generation = cache.generation if cache is not None else 0
    written = has_written()
    row = first(statement, params) if written else first(statement, params)
    if row is None:
        return None
    app = app_from(row)
    if cache is not None and not written:
        cache.keep(app, generation)
    return app


def app_by_client_id(client_id: str | None) -> App | None:
    """An app by its public id, active or not, read once per request: Authlib validates an
    authorization request twice (consent step and response), and /authorize checks trust first."""
    if not client_id or len(client_id) > 64 or "\x00" in client_id:
        return None
    app = g.setdefault("apps_by_client_id", {}).get(client_id)
    return app if app is not None else _looked_up(("client_id", client_id), _BY_CLIENT_ID, {"client_id": client_id})


def app_by_id(pk: int) -> App | None:
    """An app by its row id (a pending request names its app this way), read once per request."""
    app = g.setdefault("apps_by_id", {}).get(pk)
    return app if app is not None else _looked_up(("id", pk), _BY_ID, {"id": pk})
