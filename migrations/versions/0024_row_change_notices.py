"""row change notices: API keys and their owners join apps on one channel

The key door reads a request's key with its owner on every call; on PostgreSQL each process now
keeps those it has read while the database vouches for them (app/store/row_cache.py), as it keeps
apps. A statement-level trigger on `api_keys` and one on `users` (a key's owner: suspension and
role pause their keys) send the same notice as the one on `clients`, on a channel renamed for
what it now carries: NOTIFY `credits_id_rows`, delivered when the writer's transaction commits.
SQLite has no notices; nothing is created there.

Revision ID: 0024_row_change_notices
Revises: 0023_key_activity
Create Date: 2026-11-27

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0024_row_change_notices'
down_revision = '0023_key_activity'
branch_labels = None
depends_on = None

TABLES = {'clients': 'clients_changed', 'api_keys': 'api_keys_changed', 'users': 'users_changed'}


def _notify_function(name: str, channel: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('{channel}', '');
            RETURN NULL;
        END
        $$
        """


def _trigger(table: str, trigger: str, function: str) -> str:
    return (
        f"CREATE TRIGGER {trigger} AFTER UPDATE OR DELETE OR TRUNCATE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
    )


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute(_notify_function('credits_id_rows_changed', 'credits_id_rows'))
    op.execute("DROP TRIGGER IF EXISTS clients_changed ON clients")
    op.execute("DROP FUNCTION IF EXISTS credits_id_apps_changed()")
    for table, trigger in TABLES.items():
        op.execute(_trigger(table, trigger, 'credits_id_rows_changed'))


def downgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table, trigger in TABLES.items():
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
    op.execute("DROP FUNCTION IF EXISTS credits_id_rows_changed()")
    op.execute(_notify_function('credits_id_apps_changed', 'credits_id_apps'))
    op.execute(_trigger('clients', 'clients_changed', 'credits_id_apps_changed'))
