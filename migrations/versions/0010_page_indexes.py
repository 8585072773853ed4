"""page indexes: the audit trail by event type and time

The console's audit log filters by event type over a range of days, and the activity pictures
(sign-ins and consents per day for the last 30 days, provider-wide) read one or two event types
over 30 days: `(action, created_at)` serves both without walking other events.

Revision ID: 0010_page_indexes
Revises: 0009_member_accounts
Create Date: 2026-11-24

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0010_page_indexes'
down_revision = '0009_member_accounts'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_audit_events_action_created', 'audit_events', ['action', 'created_at'], unique=False)


def downgrade():
    op.drop_index('ix_audit_events_action_created', table_name='audit_events')
