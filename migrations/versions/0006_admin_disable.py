"""admin disable: an app an administrator disabled stays disabled until an administrator enables it

Revision ID: 0006_admin_disable
Revises: 0005_security
Create Date: 2026-11-23

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0006_admin_disable'
down_revision = '0005_security'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('clients', schema=None) as batch_op:
        batch_op.add_column(sa.Column('disabled_by_admin', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table('clients', schema=None) as batch_op:
        batch_op.drop_column('disabled_by_admin')
