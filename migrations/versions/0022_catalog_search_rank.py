"""catalog search: names ranked by popularity within one key

(search_key, popularity DESC, id) on profiles, tracks and albums: the exact tier of a search reads
the most popular rows holding one folded name from the index in order, however many hold it (a
hundred tracks called "Home", thousands called "Midnight"), where it read the popularity index
until enough rows had that name, or every row with the name and sorted them. Plain CREATE INDEX
on both stores (no batch: a batch alter would rebuild the tables and their SQLite search triggers).

Revision ID: 0022_catalog_search_rank
Revises: 0021_meter_shards
Create Date: 2026-11-27

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0022_catalog_search_rank'
down_revision = '0021_meter_shards'
branch_labels = None
depends_on = None

TABLES = ("profiles", "tracks", "albums")


def upgrade():
    for table in TABLES:
        op.create_index(f'ix_{table}_search_rank', table, ['search_key', sa.text('popularity DESC'), 'id'], unique=False)


def downgrade():
    for table in TABLES:
        op.drop_index(f'ix_{table}_search_rank', table_name=table)
