"""Issue 20, item 1: services only flush; the console page or the command that calls them commits
once (one unit of work). And one CLI module per noun, none changing another's commands."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import click
import psycopg
import pytest
from sqlalchemy import event, func, select, text, update
from sqlalchemy.exc import DBAPIError

import app as app_package
from app.core.extensions import db
from app.models import AuditEvent, Client, SigningKey, User
from app.protocol.jwks import keystore
from app.services.apps import register_app
from app.services.registration import NewClient
from app.store import store
from tests.factories import make_member
from tests.production.servers import ON_POSTGRES

ROOT = Path(__file__).resolve().parents[2]

# Called by pages and commands: they join the caller's transaction and never end it.
SERVICES = (
    "app/services/apikeys.py",
    "app/services/catalog_seed.py",
    "app/services/apps.py",
    "app/services/demo.py",
    "app/services/fees.py",
    "app/services/housekeeping.py",
    "app/protocol/jwks.py",
    "app/services/members.py",
    "app/services/metering.py",
    "app/services/registration.py",
)
# The callers that own a unit of work: each function commits at most once.
CALLERS = (
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "app/cli").glob("*.py")),
    "app/web/console/admin.py",
    "app/web/console/api_keys.py",
    "app/web/console/views.py",
)
COMMAND_MODULES = ("api_keys", "billing", "catalog", "clients", "demo", "fees", "housekeeping", "keys", "users")
COMMANDS = {
    "users": {
        "create",
        "invite",
        "set-role",
        "set-tier",
        "set-password",
        "suspend",
        "unsuspend",
        "remove-second-factor",
        "list",
        "show",
    },
    "clients": {"create", "list", "show", "update", "rotate-secret", "disable", "enable", "delete"},
    "keys": {"generate", "ensure", "rotate", "retire", "revoke", "list"},
    "api-keys": {"create", "list", "rotate", "revoke", "usage"},
    "fees": {"report"},
    "demo": {"seed"},
    "billing": {"accounts", "adjust", "enterprise", "post", "refund", "show", "statement"},
    "catalog": {"generate", "refresh"},
    "purge-expired": set(),
}


def calls(tree: ast.AST, method: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
    ]


@pytest.mark.parametrize("path", SERVICES)
def test_services_never_commit_or_roll_back(path):
    tree = ast.parse((ROOT / path).read_text())
    found = [f"{method} on line {call.lineno}" for method in ("commit", "rollback") for call in calls(tree, method)]
    assert found == [], f"{path} ends its caller's transaction: {found}"


@pytest.mark.parametrize("path", CALLERS)
def test_each_page_and_command_commits_at_most_once(path):
    tree = ast.parse((ROOT / path).read_text())
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    assert functions
    for function in functions:
        assert len(calls(function, "commit")) <= 1, f"{path}: {function.name} commits more than once"


def count(model, *where) -> int:
    """Rows another connection sees: what is committed."""
    with db.engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(model).where(*where))


def test_an_app_and_its_audit_row_are_committed_together_by_the_caller():
    spec = NewClient(name="One unit", redirect_uris=["https://unit.example/cb"])
    client, _ = register_app(spec, actor=None)
    registered = (AuditEvent.action == "app.registered", AuditEvent.client_id == client.id)
    assert db.session.scalar(select(func.count()).select_from(AuditEvent).where(*registered)) == 1
    assert count(Client, Client.id == client.id) == 0 and count(AuditEvent, *registered) == 0
    db.session.rollback()
    assert count(Client, Client.name == "One unit") == 0 and count(AuditEvent, *registered) == 0

    client, _ = register_app(spec, actor=None)
    db.session.commit()
    registered = (AuditEvent.action == "app.registered", AuditEvent.client_id == client.id)
    assert count(Client, Client.id == client.id) == 1 and count(AuditEvent, *registered) == 1


def test_a_rotation_is_published_only_once_committed(fresh_keys):
    """The key store caches the key set: a rotation read back inside its own transaction must not
    reach the cache, or a rolled-back key would be published (and signed with) until the next
    refresh."""
    keystore.refresh_interval = 3600
    try:
        new = keystore.rotate(immediate=True)
        assert keystore.snapshot().signing_kid == new.kid  # the transaction sees its own change
        shared = keystore.fresh_snapshot()  # what other requests are served meanwhile
        assert shared is None or new.kid not in {row.kid for row in shared.rows}
        db.session.rollback()
        assert keystore.snapshot().signing_kid == fresh_keys.kid
        assert new.kid not in {k["kid"] for k in keystore.public_key_set()["keys"]}
        assert count(SigningKey, SigningKey.kid == new.kid) == 0

        new = keystore.rotate(immediate=True)
        db.session.commit()
        assert keystore.snapshot().signing_kid == new.kid  # published at the commit, not at a refresh
        assert new.kid in {k["kid"] for k in keystore.public_key_set()["keys"]}
    finally:
        keystore.refresh_interval = 0


@pytest.fixture
def fresh_import():
    """Import command modules afresh, then put the app's own modules back."""
    saved = {name: module for name, module in sys.modules.items() if name.startswith("app.cli")}
    for name in saved:
        del sys.modules[name]
    yield
    for name in [name for name in sys.modules if name.startswith("app.cli")]:
        del sys.modules[name]
    sys.modules.update(saved)
    app_package.cli = saved["app.cli"]


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_importing_a_command_module_loads_no_other(fresh_import, name):
    """A module that added commands to another module's group would have to import it."""
    importlib.import_module(f"app.cli.{name}")
    loaded = {module for module in sys.modules if module.startswith("app.cli.")}
    assert loaded == {f"app.cli.{name}", "app.cli.output"}


def test_each_group_holds_only_the_commands_of_its_own_module(app):
    registered = {name: command for name, command in app.cli.commands.items() if name in COMMANDS}
    assert {name: set(getattr(c, "commands", {})) for name, c in registered.items()} == COMMANDS
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"app.cli.{name}")
        own = [value for value in vars(module).values() if isinstance(value, click.Command)]
        groups = [value for value in own if isinstance(value, click.Group)]
        assert len(groups) == (0 if name == "housekeeping" else 1), f"app.cli.{name}: one group per noun"
        for group in groups:
            assert registered[group.name] is group
            strays = {c.name: c.callback.__module__ for c in group.commands.values()}
            assert set(strays.values()) == {module.__name__}, f"{group.name} has commands from elsewhere: {strays}"


# -- when a transaction begins and how it ends (app/store/unit_of_work.py: begin_at_first_write) -----------


def ended_by(app, work) -> list[str]:
    """How the transaction of an app context running `work` ended: the engine's commits and
    rollbacks, in order, as the context closed."""
    ends: list[str] = []

    def committed(conn):
        ends.append("commit")

    def rolled_back(conn):
        ends.append("rollback")

    engine = db.engine
    event.listen(engine, "commit", committed)
    event.listen(engine, "rollback", rolled_back)
    try:
        with app.app_context():  # a context of its own: its session ends as a request's does
            work()
    finally:
        event.remove(engine, "commit", committed)
        event.remove(engine, "rollback", rolled_back)
    return ends


def open_on_the_database() -> bool:
    """Whether the session's connection has a transaction open on the database itself."""
    dbapi_connection = db.session.connection().connection.dbapi_connection
    if db.engine.dialect.name == "postgresql":
        return dbapi_connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
    return dbapi_connection.in_transaction


def test_a_transaction_begins_on_the_database_at_its_first_write(app):
    """Reads before the first write go out on their own (no BEGIN before them, no COMMIT or
    ROLLBACK after: psycopg forgets its prepared statements at every ROLLBACK); the write and
    everything after it are one transaction, which sees its own writes and ends as one."""
    member = make_member(name="Before")
    with app.app_context():
        assert db.session.scalar(select(User.name).where(User.id == member.id)) == "Before"
        assert not open_on_the_database()
        db.session.execute(update(User).where(User.id == member.id).values(name="After"))
        assert open_on_the_database()
        assert db.session.scalar(select(User.name).where(User.id == member.id)) == "After"
        db.session.rollback()
        assert not open_on_the_database()
        assert db.session.scalar(select(User.name).where(User.id == member.id)) == "Before"
        assert not open_on_the_database()
        db.session.execute(update(User).where(User.id == member.id).values(name="Committed"))
        db.session.commit()
        assert not open_on_the_database()
    assert db.session.scalar(select(User.name).where(User.id == member.id)) == "Committed"


@pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL's isolation levels (set TEST_DATABASE_URL; CI does)")
def test_a_transaction_runs_at_read_committed_whatever_the_servers_default(app):
    """Reads before the first write see what reads inside the transaction would see only at READ
    COMMITTED; a database whose default is stricter must not change that."""
    member = make_member()
    with db.engine.connect() as conn:  # one connection throughout: the SET is the connection's
        conn.execute(text("SET SESSION default_transaction_isolation = 'serializable'"))
        conn.commit()  # the connection's default from now on; the next transaction is new
        try:
            conn.execute(update(User).where(User.id == member.id).values(name="Renamed"))
            level = conn.scalar(text("SHOW transaction_isolation"))
            conn.rollback()
        finally:
            conn.execute(text("SET SESSION default_transaction_isolation = 'read committed'"))
            conn.commit()
    assert level == "read committed"


def test_a_request_that_only_read_ends_as_it_began(app):
    member = make_member()
    assert ended_by(app, lambda: db.session.scalar(select(User.name).where(User.id == member.id))) == ["rollback"]


LOCKING_SQL = re.compile(r"\bFOR\s+(NO\s+KEY\s+)?(UPDATE|SHARE)\b|pg_advisory", re.IGNORECASE)


def locking_reads(source: str) -> list[str]:
    """What in `source` would take a lock with a read: SQLAlchemy's with_for_update(), or SQL text
    (not a docstring) that says FOR UPDATE, FOR SHARE or pg_advisory_*."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "with_for_update":
            found.append(f"line {node.lineno}: with_for_update")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and LOCKING_SQL.search(node.value)
        ):
            found.append(f"line {node.lineno}: {node.value[:60]!r}")
    return found


def test_locking_reads_are_recognised():
    assert locking_reads("q = select(t).with_for_update()") == ["line 1: with_for_update"]
    assert locking_reads('text("SELECT id FROM codes WHERE id = 1 FOR UPDATE")')
    assert locking_reads('text("SELECT pg_advisory_xact_lock(1)")')
    assert locking_reads('"""No SELECT ... FOR UPDATE here."""\nx = "a form for sharing"') == []


# The one module that locks rows: the store's serialization of revocation and rotation (its
# docstring). Each of its locks is a step of a statement that writes, never a read on its own:
# test_the_stores_locks_are_steps_of_statements_that_write.
LOCKING_STORE = "app/store/postgresql.py"


def test_no_read_takes_a_lock():
    """Reads before a request's first write run outside its transaction (on PostgreSQL), which is
    sound only while no read locks anything: a lock taken outside a transaction is gone at once."""
    found = {
        relative: hits
        for path in (ROOT / "app").rglob("*.py")
        if (relative := str(path.relative_to(ROOT))) != LOCKING_STORE and (hits := locking_reads(path.read_text()))
    }
    assert found == {}


MEMBER_LOCK, APP_LOCK = 1, 2  # app/store/postgresql.py's advisory lock classes


def advisory_held_elsewhere(lock: int, key: object) -> bool:
    """Whether another connection finds the member's or the app's advisory lock taken exclusively."""
    second = "hashtext(:key)" if lock == MEMBER_LOCK else "CAST(:key AS INTEGER)"
    with db.engine.connect() as other:
        try:
            got = other.execute(
                text(f"SELECT pg_try_advisory_xact_lock_shared(:lock, {second})"), {"lock": lock, "key": key}
            ).scalar_one()
        finally:
            other.rollback()
    return not got


@pytest.mark.skipif(not ON_POSTGRES, reason="the store locks rows on PostgreSQL only (set TEST_DATABASE_URL; CI does)")
def test_the_stores_locks_are_steps_of_statements_that_write(app):
    """The statements that store a pair take the member's and the app's advisory locks, shared, as
    a step of their own write (no row lock: a share lock writes to the row); `end_grants` takes the
    member's (or the app's) exclusively as its first write, so the lock holds until the commit
    even when nothing before it had opened the transaction."""
    from sqlalchemy.dialects import postgresql

    from app.store.codes import REDEMPTION
    from app.store.postgresql import FoldedSpendAndStore
    from app.store.tokens import ROTATION

    for spend_and_store in (FoldedSpendAndStore(*ROTATION), FoldedSpendAndStore(*REDEMPTION)):
        sql = str(spend_and_store._in_one.compile(dialect=postgresql.dialect()))
        # A WITH that updates and inserts: the transaction begins with it (begin_at_first_write).
        assert sql.startswith("WITH held AS") and "FOR SHARE" not in sql
        assert "pg_advisory_xact_lock_shared(1, hashtext(users.id))" in sql
        assert "pg_advisory_xact_lock_shared(2, CAST(clients.id AS INTEGER))" in sql
        assert "\nspent AS \n(UPDATE" in sql and "\nsuccessor AS \n(INSERT" in sql

    member = make_member()
    app_pk = register_app(NewClient(name="Locked", redirect_uris=["https://locked.example/cb"]), None)[0].id
    db.session.commit()
    for ended, lock in (({"user_id": member.id}, MEMBER_LOCK), ({"client_id": app_pk}, APP_LOCK)):
        with app.app_context():
            assert not open_on_the_database()
            store().tokens.end_grants(**ended)
            assert open_on_the_database() and advisory_held_elsewhere(
                lock, member.id if lock == MEMBER_LOCK else app_pk
            )
            db.session.commit()
            assert not advisory_held_elsewhere(lock, member.id if lock == MEMBER_LOCK else app_pk)


def test_a_request_that_touched_no_table_ends_no_transaction(app):
    assert ended_by(app, lambda: None) == []


def test_a_write_left_uncommitted_is_still_rolled_back(app):
    member = make_member(name="Before")

    def renamed():
        db.session.scalar(select(User.name).where(User.id == member.id))
        db.session.execute(update(User).where(User.id == member.id).values(name="After"))

    assert ended_by(app, renamed) == ["rollback"]
    db.session.expire_all()
    assert db.session.scalar(select(User.name).where(User.id == member.id)) == "Before"


def test_a_change_pending_in_the_session_is_not_flushed_by_the_commit(app):
    member = make_member(name="Before")

    def edited():
        db.session.get(User, member.id).name = "After"  # loaded by a SELECT, changed, never flushed

    assert ended_by(app, edited) == ["rollback"]
    db.session.expire_all()
    assert db.session.get(User, member.id).name == "Before"


def test_a_transaction_whose_statement_failed_is_rolled_back(app):
    def failed():
        with pytest.raises(DBAPIError):
            db.session.execute(text("SELECT no_such_column FROM users"))

    assert ended_by(app, failed) == ["rollback"]
