"""console: audit trail, soft delete and secret rotation grace

Revision ID: 0004_console
Revises: 0002_catalog
Create Date: 2026-11-23

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0004_console'
down_revision = '0002_catalog'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('audit_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('action', sa.String(length=40), nullable=False),
    sa.Column('actor_id', sa.String(length=36), nullable=True),
    sa.Column('actor_email', sa.String(length=254), nullable=True),
    sa.Column('subject_id', sa.String(length=36), nullable=True),
    sa.Column('client_id', sa.Integer(), nullable=True),
    sa.Column('ip', sa.String(length=64), nullable=True),
    sa.Column('source', sa.String(length=8), nullable=False),
    sa.Column('detail', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['actor_id'], ['users.id'], name=op.f('fk_audit_events_actor_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['client_id'], ['clients.id'], name=op.f('fk_audit_events_client_id_clients'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['subject_id'], ['users.id'], name=op.f('fk_audit_events_subject_id_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_events'))
    )
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.create_index('ix_audit_events_actor_created', ['actor_id', 'created_at'], unique=False)
        batch_op.create_index('ix_audit_events_client_created', ['client_id', 'created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_events_created_at'), ['created_at'], unique=False)
        batch_op.create_index('ix_audit_events_subject_created', ['subject_id', 'created_at'], unique=False)

    with op.batch_alter_table('clients', schema=None) as batch_op:
        batch_op.add_column(sa.Column('previous_secret_hash', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('previous_secret_expires_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True))



def downgrade():
    with op.batch_alter_table('clients', schema=None) as batch_op:
        batch_op.drop_column('deleted_at')
        batch_op.drop_column('previous_secret_expires_at')
        batch_op.drop_column('previous_secret_hash')

    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_events_subject_created')
        batch_op.drop_index(batch_op.f('ix_audit_events_created_at'))
        batch_op.drop_index('ix_audit_events_client_created')
        batch_op.drop_index('ix_audit_events_actor_created')

    op.drop_table('audit_events')
