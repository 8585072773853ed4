"""interaction member: a pending sign-in request knows its member once one is signed in, so
disconnecting an app closes that member's pending requests to it

Revision ID: 0007_interaction_member
Revises: 0006_admin_disable
Create Date: 2026-11-24

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0007_interaction_member'
down_revision = '0006_admin_disable'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('interactions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('user_id', sa.String(length=36), nullable=True))
        batch_op.create_index(batch_op.f('ix_interactions_user_id'), ['user_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_interactions_user_id_users'), 'users', ['user_id'], ['id'],
                                    ondelete='CASCADE')


def downgrade():
    with op.batch_alter_table('interactions', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_interactions_user_id_users'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_interactions_user_id'))
        batch_op.drop_column('user_id')
