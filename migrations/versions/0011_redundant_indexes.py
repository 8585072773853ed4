"""redundant indexes: three single-column indexes that a wider index already leads with

`ix_tokens_user_id`, `ix_consents_user_id` and `ix_credit_roles_parent_id` index the first column of
`ix_tokens_user_client`, `uq_consents_user_client` and `uq_credit_roles_parent_name`, which answer
the same lookups (by member, by role family). Each was one more index to update on every token
issued, every consent given and every role added, for no query.

Revision ID: 0011_redundant_indexes
Revises: 0010_page_indexes
Create Date: 2026-11-25

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0011_redundant_indexes'
down_revision = '0010_page_indexes'
branch_labels = None
depends_on = None


def upgrade():
    op.drop_index('ix_tokens_user_id', table_name='tokens')
    op.drop_index('ix_consents_user_id', table_name='consents')
    op.drop_index('ix_credit_roles_parent_id', table_name='credit_roles')


def downgrade():
    op.create_index('ix_credit_roles_parent_id', 'credit_roles', ['parent_id'], unique=False)
    op.create_index('ix_consents_user_id', 'consents', ['user_id'], unique=False)
    op.create_index('ix_tokens_user_id', 'tokens', ['user_id'], unique=False)
