"""security: refresh replays for the grace window

The sealed (AES-GCM) token response of a refresh rotation, kept for REFRESH_GRACE_SECONDS so a
retried refresh gets the same answer.

Revision ID: 0005_security
Revises: 0004_console
Create Date: 2026-11-23

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0005_security'
down_revision = '0004_console'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('refresh_replays',
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('successor_id', sa.Integer(), nullable=False),
    sa.Column('sealed', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['successor_id'], ['tokens.id'], name=op.f('fk_refresh_replays_successor_id_tokens'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['token_id'], ['tokens.id'], name=op.f('fk_refresh_replays_token_id_tokens'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('token_id', name=op.f('pk_refresh_replays'))
    )
    with op.batch_alter_table('refresh_replays', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_refresh_replays_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_refresh_replays_successor_id'), ['successor_id'], unique=False)



def downgrade():
    with op.batch_alter_table('refresh_replays', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_refresh_replays_successor_id'))
        batch_op.drop_index(batch_op.f('ix_refresh_replays_created_at'))

    op.drop_table('refresh_replays')
