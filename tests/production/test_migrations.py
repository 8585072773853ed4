"""The models and the migrations describe the same schema, on whichever backend the suite runs
(SQLite by default, PostgreSQL with TEST_DATABASE_URL): the test database was built by running
the migrations, and Alembic's autogenerate comparison against the models must find nothing."""

import json
import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from app.core.config import PROJECT_ROOT
from app.core.extensions import db
from app.models.catalog import outside_the_models
from tests.conftest import server_env


def _in_the_models(name, type_, parent_names) -> bool:
    return not outside_the_models(name, type_)


def test_models_match_migrations():
    """The stores' text indexes (FTS5 tables on SQLite, GIN indexes on PostgreSQL) are the
    migration's alone; everything else must match."""
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "include_name": _in_the_models})
        diff = compare_metadata(context, db.metadata)
    assert diff == [], f"models and migrations differ on {db.engine.dialect.name}: {diff}"


def test_database_is_at_the_single_head():
    heads = ScriptDirectory(str(PROJECT_ROOT / "migrations")).get_heads()
    assert len(heads) == 1, f"the migrations have several heads: {heads}"
    with db.engine.connect() as conn:
        current = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    assert current == heads


def test_comparison_does_notice_a_difference():
    """The check above could pass vacuously if the comparison saw nothing; show it sees a change."""
    with db.engine.begin() as conn:
        conn.execute(text("CREATE TABLE stray_table_for_migration_check (id INTEGER PRIMARY KEY)"))
    try:
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "include_name": _in_the_models})
            diff = compare_metadata(context, db.metadata)
        assert [(d[0], d[1].name) for d in diff] == [("remove_table", "stray_table_for_migration_check")]
    finally:
        with db.engine.begin() as conn:
            conn.execute(text("DROP TABLE stray_table_for_migration_check"))


def test_flask_db_upgrade_logs_json_lines_once(settings, tmp_path):
    """`flask db upgrade` (a deploy step) logs like the server: one JSON object per line, each line
    once. Alembic's own logging config would swap the app's JSON handler for a plain-text one."""
    env = server_env(settings, DATABASE_URL=f"sqlite:///{tmp_path / 'fresh.sqlite3'}", FLASK_APP="wsgi")
    done = subprocess.run(
        [sys.executable, "-m", "flask", "db", "upgrade"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # a plain-text line fails here
    upgrades = [
        r["message"]
        for r in records
        if r.get("logger") == "alembic.runtime.migration" and r["message"].startswith("Running upgrade")
    ]
    heads = ScriptDirectory(str(PROJECT_ROOT / "migrations")).get_heads()
    assert upgrades and upgrades[-1].split(" -> ")[1].startswith(heads[0])
    assert len(upgrades) == len(set(upgrades))
