"""Issue 20, item 3: one store for the apps' rows. The `clients` table is read and written through
app/store (SQLAlchemy Core, frozen records) by every path - the protocol, registration, the
console, the account page, the ledger, the audit filters, the demo and the CLI. The ORM model
`Client` only defines the table (Alembic, relationships, test fixtures).

Read from the source, like the units-of-work checks: a module that imports the ORM class again
fails here before any behaviour changes."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

import pytest

from app.core.extensions import db
from app.models import ClientStatus
from app.services.registration import NewClient, register_client, rotate_secret
from app.store import store
from app.store.apps import RegisteredApp

ROOT = Path(__file__).resolve().parents[2]
# Where the ORM class may be named: the models define it, the store reads its table.
ALLOWED = ("app/models/", "app/store/")
MODEL_MODULES = {"app.models", "app.models.client"}


def modules() -> list[Path]:
    return sorted(
        path for path in (ROOT / "app").rglob("*.py") if not path.relative_to(ROOT).as_posix().startswith(ALLOWED)
    )


def orm_client_uses(source: str) -> list[str]:
    """Every place a module imports the ORM class `Client` (from app.models or app.models.client, by
    any name) or reaches it as an attribute of a models module (`models.Client`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in MODEL_MODULES:
            found += [f"line {node.lineno}: from {node.module} import Client" for a in node.names if a.name == "Client"]
        elif isinstance(node, ast.ImportFrom) and node.module == "app" and any(a.name == "models" for a in node.names):
            found.append(f"line {node.lineno}: from app import models")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name in MODEL_MODULES]
        elif isinstance(node, ast.Attribute) and node.attr == "Client":
            found.append(f"line {node.lineno}: .Client")
    return found


def test_the_check_reads_the_modules_that_used_the_model():
    names = {path.relative_to(ROOT).as_posix() for path in modules()}
    assert {
        "app/services/registration.py",
        "app/services/apps.py",
        "app/services/fees.py",
        "app/protocol/grants.py",
    } <= names
    assert not any(name.startswith(ALLOWED) for name in names)
    source = (
        "from app.models import AuditEvent, Client as C, ClientStatus\nimport app.models.client\nx = models.Client\n"
    )
    assert orm_client_uses(source) == [
        "line 1: from app.models import Client",
        "line 2: import app.models.client",
        "line 3: .Client",
    ]
    assert orm_client_uses("from app.models import ClientRules, ClientStatus, ClientType\n") == []


@pytest.mark.parametrize("path", modules(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_no_module_outside_the_store_and_the_models_uses_the_orm_client(path):
    """Enums (`ClientStatus`, `ClientType`) and the rules (`ClientRules`) may be imported; the ORM
    class may not: its rows are the store's (`app.store.apps`, for the protocol
    and for registering and managing apps)."""
    assert orm_client_uses(path.read_text()) == [], f"{path.relative_to(ROOT)} uses the ORM model Client"


def test_a_change_is_read_back_by_the_protocol_store_in_the_same_request():
    """The protocol store keeps the apps it read for the rest of the request; a change made through
    the registry drops them, so a later lookup sees the row as it now is."""
    app, secret = register_client(NewClient(name="Cached", redirect_uris=["https://cached.example/cb"]))
    assert isinstance(app, RegisteredApp) and store().apps.by_client_id(app.client_id).is_active
    store().apps.set_status(app.id, ClientStatus.DISABLED, disabled_by_admin=True)
    assert not store().apps.by_client_id(app.client_id).is_active
    new = rotate_secret(app, grace=timedelta(hours=1))
    assert store().apps.by_client_id(app.client_id).check_client_secret(new)
    assert store().apps.by_client_id(app.client_id).check_client_secret(secret)  # the previous one, in its grace period
    stored = store().apps.registered(app.client_id)
    assert stored.previous_secret_hash == app.client_secret_hash and stored.disabled_by_admin


def test_the_audit_trail_names_its_apps_through_the_store():
    """The audit pages show each event's app from the store's records (`Page.apps`); the ORM
    relationship is not loaded behind them."""
    from sqlalchemy.exc import InvalidRequestError

    from app.services.apps import register_app
    from app.services.audit import AuditFilter, audit_page

    app, _ = register_app(NewClient(name="Audited", redirect_uris=["https://audited.example/cb"]), actor=None)
    db.session.commit()
    db.session.expunge_all()  # the events as a page reads them, not the one `record` just added
    page = audit_page(AuditFilter())
    [event] = page.items
    assert event.client_id == app.id and list(page.apps) == [app.id]
    assert (page.apps[app.id].client_id, page.apps[app.id].name) == (app.client_id, "Audited")
    with pytest.raises(InvalidRequestError):
        event.client
