"""the meter in shards: `api_usage.shard`, part of the primary key (key_id, day, shard)

A day's count is the sum of its shards. On PostgreSQL each database connection counts in a shard
of its own (its server process id), so two requests counting for one key never wait on one row's
lock; SQLite, and every day housekeeping has folded, keep one shard, 0. The rows already there
become shard 0. Downgrading folds every day back into one row first.

Revision ID: 0021_meter_shards
Revises: 0020_catalog_search
Create Date: 2026-11-27

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0021_meter_shards"
down_revision = "0020_catalog_search"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("api_usage") as batch_op:
        batch_op.add_column(sa.Column("shard", sa.Integer(), server_default="0", nullable=False))
        batch_op.drop_constraint("pk_api_usage", type_="primary")
        batch_op.create_primary_key("pk_api_usage", ["key_id", "day", "shard"])


def downgrade():
    # One row per key and day again: the sums into shard -1, the shards gone, then -1 becomes 0.
    op.execute(
        "INSERT INTO api_usage (key_id, day, shard, count) "
        "SELECT key_id, day, -1, SUM(count) FROM api_usage GROUP BY key_id, day"
    )
    op.execute("DELETE FROM api_usage WHERE shard <> -1")
    op.execute("UPDATE api_usage SET shard = 0")
    with op.batch_alter_table("api_usage") as batch_op:
        batch_op.drop_constraint("pk_api_usage", type_="primary")
        batch_op.create_primary_key("pk_api_usage", ["key_id", "day"])
        batch_op.drop_column("shard")
