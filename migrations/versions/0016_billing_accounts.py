"""billing: prepaid accounts, their append-only ledger, payments, provider webhook events, and the
per-key limits of enterprise terms

`billing_accounts` (one per developer), `billing_entries` (the ledger: the balance is their sum;
`idempotency` unique so whatever posts twice posts once), `billing_payments` (charges asked of the
payment provider), `billing_webhook_events` (provider events already applied), and
`api_keys.custom_per_minute` / `custom_per_second` (enterprise limits set by an admin).

Revision ID: 0016_billing_accounts
Revises: 0015_workspace_keys_rosters
Create Date: 2026-11-27

"""
from alembic import op
import sqlalchemy as sa



# revision identifiers, used by Alembic.
revision = '0016_billing_accounts'
down_revision = '0015_workspace_keys_rosters'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('billing_accounts',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('owner_id', sa.String(length=36), nullable=False),
    sa.Column('plan', sa.String(length=16), nullable=False),
    sa.Column('next_plan', sa.String(length=16), nullable=True),
    sa.Column('enterprise', sa.Boolean(), nullable=False),
    sa.Column('storage_allowed', sa.Boolean(), nullable=False),
    sa.Column('terms_until', sa.Date(), nullable=True),
    sa.Column('terms_note', sa.String(length=500), nullable=True),
    sa.Column('card_provider', sa.String(length=16), nullable=True),
    sa.Column('customer_ref', sa.String(length=255), nullable=True),
    sa.Column('card_ref', sa.String(length=255), nullable=True),
    sa.Column('card_label', sa.String(length=120), nullable=True),
    sa.Column('warned_month', sa.String(length=7), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_billing_accounts_owner_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_billing_accounts')),
    sa.UniqueConstraint('owner_id', name=op.f('uq_billing_accounts_owner_id'))
    )
    op.create_table('billing_entries',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('account_id', sa.String(length=36), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('amount', sa.Numeric(precision=14, scale=2), nullable=False),
    sa.Column('posted_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('day', sa.Date(), nullable=True),
    sa.Column('key_id', sa.String(length=36), nullable=True),
    sa.Column('calls', sa.Integer(), nullable=True),
    sa.Column('rate', sa.Numeric(precision=8, scale=3), nullable=True),
    sa.Column('band', sa.Integer(), nullable=True),
    sa.Column('memo', sa.String(length=255), nullable=False),
    sa.Column('idempotency', sa.String(length=160), nullable=False),
    sa.Column('actor_id', sa.String(length=36), nullable=True),
    sa.Column('payment_ref', sa.String(length=255), nullable=True),
    sa.ForeignKeyConstraint(['account_id'], ['billing_accounts.id'], name=op.f('fk_billing_entries_account_id_billing_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_billing_entries')),
    sa.UniqueConstraint('idempotency', name=op.f('uq_billing_entries_idempotency'))
    )
    with op.batch_alter_table('billing_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_billing_entries_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_billing_entries_posted_at'), ['posted_at'], unique=False)

    op.create_table('billing_payments',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('account_id', sa.String(length=36), nullable=False),
    sa.Column('provider', sa.String(length=16), nullable=False),
    sa.Column('provider_ref', sa.String(length=255), nullable=True),
    sa.Column('amount_cents', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('refunded_cents', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['billing_accounts.id'], name=op.f('fk_billing_payments_account_id_billing_accounts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_billing_payments')),
    sa.UniqueConstraint('provider_ref', name=op.f('uq_billing_payments_provider_ref'))
    )
    with op.batch_alter_table('billing_payments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_billing_payments_account_id'), ['account_id'], unique=False)

    op.create_table('billing_webhook_events',
    sa.Column('event_id', sa.String(length=255), nullable=False),
    sa.Column('provider', sa.String(length=16), nullable=False),
    sa.Column('type', sa.String(length=80), nullable=False),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('event_id', name=op.f('pk_billing_webhook_events'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.add_column(sa.Column('custom_per_minute', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('custom_per_second', sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_column('custom_per_second')
        batch_op.drop_column('custom_per_minute')
    op.drop_table('billing_webhook_events')
    with op.batch_alter_table('billing_payments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_billing_payments_account_id'))
    op.drop_table('billing_payments')
    with op.batch_alter_table('billing_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_billing_entries_posted_at'))
        batch_op.drop_index(batch_op.f('ix_billing_entries_account_id'))
    op.drop_table('billing_entries')
    op.drop_table('billing_accounts')
