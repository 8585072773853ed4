"""an API key's recent requests: `api_key_requests`, the console key page's list

One row per request made with a key (answered or refused): when, through which surface, the
method, the path without its query string, the tool of a tool call, the status, a refusal's
reason and the request id. At most KEY_ACTIVITY_KEEP rows per key (the oldest deleted as each
batch is written) and none older than KEY_ACTIVITY_DAYS (housekeeping); the index on
(key_id, id) serves both the page and that trim.

Revision ID: 0023_key_activity
Revises: 0022_catalog_search_rank
Create Date: 2026-11-27

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0023_key_activity'
down_revision = '0022_catalog_search_rank'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('api_key_requests',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('key_id', sa.String(length=36), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('surface', sa.String(length=8), nullable=False),
    sa.Column('method', sa.String(length=8), nullable=False),
    sa.Column('path', sa.String(length=200), nullable=False),
    sa.Column('tool', sa.String(length=64), nullable=True),
    sa.Column('status', sa.SmallInteger(), nullable=False),
    sa.Column('message', sa.String(length=300), nullable=True),
    sa.Column('request_id', sa.String(length=128), nullable=False),
    sa.ForeignKeyConstraint(['key_id'], ['api_keys.id'], name=op.f('fk_api_key_requests_key_id_api_keys'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_key_requests'))
    )
    with op.batch_alter_table('api_key_requests', schema=None) as batch_op:
        batch_op.create_index('ix_api_key_requests_key_id', ['key_id', 'id'], unique=False)


def downgrade():
    with op.batch_alter_table('api_key_requests', schema=None) as batch_op:
        batch_op.drop_index('ix_api_key_requests_key_id')
    op.drop_table('api_key_requests')
