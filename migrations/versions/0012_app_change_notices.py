"""app change notices: on PostgreSQL, a NOTIFY whenever a statement changes or deletes apps

A statement-level trigger on `clients` sends NOTIFY `credits_id_apps` (delivered when its
transaction commits, and not at all if it rolls back). Every process keeps the apps it has read
while it LISTENs on that channel and drops them at the first notice (app/store/app_cache.py),
whoever changed the row: the console, the command line or an operator's own SQL. SQLite has no
notices; there apps are read on every request, and nothing is created.

Revision ID: 0012_app_change_notices
Revises: 0011_redundant_indexes
Create Date: 2026-11-25

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0012_app_change_notices'
down_revision = '0011_redundant_indexes'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute(
        """
        CREATE OR REPLACE FUNCTION credits_id_apps_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('credits_id_apps', '');
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER clients_changed AFTER UPDATE OR DELETE OR TRUNCATE ON clients "
        "FOR EACH STATEMENT EXECUTE FUNCTION credits_id_apps_changed()"
    )


def downgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute("DROP TRIGGER IF EXISTS clients_changed ON clients")
    op.execute("DROP FUNCTION IF EXISTS credits_id_apps_changed()")
