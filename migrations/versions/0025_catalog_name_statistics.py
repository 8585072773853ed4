"""catalog name statistics: a finer histogram of `search_key` on profiles, tracks and albums

Type-ahead and search rank a prefix's matches by popularity, and PostgreSQL chooses how: walk the
popularity index until enough names match (right for a common prefix), or read the prefix's range
of the name index and sort it (right for a rare one). It chooses by its estimate of how many names
fall in the range, read from the column's histogram. With the default 100 buckets over a million
tracks, a prefix with no match at all (" dj" among tracks) was estimated at about 900 - and the
walk then read the whole popularity index, over a second. 1,000 buckets estimate such ranges
within a bucket's share (about a thousandth of the table), so a rare prefix reads its range. The
statistics are gathered again here (ANALYZE: a sample, seconds on the full-size catalog). SQLite
plans without statistics of this kind; nothing changes there.

Revision ID: 0025_catalog_name_statistics
Revises: 0024_row_change_notices
Create Date: 2026-11-27

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0025_catalog_name_statistics'
down_revision = '0024_row_change_notices'
branch_labels = None
depends_on = None

TABLES = ('profiles', 'tracks', 'albums')
BUCKETS = 1000


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN search_key SET STATISTICS {BUCKETS}")
        op.execute(f"ANALYZE {table}")


def downgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN search_key SET STATISTICS -1")
