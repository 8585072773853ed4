"""member accounts: one-time links (password reset, email verification, invitation); email_verified
means verified; suspended members; when a session was last used; second factors (TOTP, recovery
codes, passkeys) and how each sign-in was made (amr) on sessions, codes and tokens

Until now `email_verified` was true for every member without any check. It becomes true only when
the member follows a mailed link, so every existing address starts unverified (the account page
offers the link; `flask demo seed` marks the demo members verified again).

Revision ID: 0009_member_accounts
Revises: 0008_api_keys
Create Date: 2026-11-24

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0009_member_accounts'
down_revision = '0008_api_keys'
branch_labels = None
depends_on = None


def upgrade():
    op.execute(sa.text("UPDATE users SET email_verified = :no").bindparams(no=False))
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('suspended_at', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('login_sessions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('amr', sa.String(length=32), server_default='pwd', nullable=False))
    with op.batch_alter_table('authorization_codes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('amr', sa.String(length=32), server_default='pwd', nullable=False))
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('amr', sa.String(length=32), server_default='pwd', nullable=False))
    op.create_table('totp_factors',
    sa.Column('user_id', sa.String(length=36), nullable=False),
    sa.Column('secret_sealed', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('confirmed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_step', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_totp_factors_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_totp_factors'))
    )
    op.create_table('recovery_codes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.String(length=36), nullable=False),
    sa.Column('code_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('used_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_recovery_codes_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recovery_codes')),
    sa.UniqueConstraint('code_hash', name=op.f('uq_recovery_codes_code_hash'))
    )
    with op.batch_alter_table('recovery_codes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_recovery_codes_user_id'), ['user_id'], unique=False)
    op.create_table('passkeys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.String(length=36), nullable=False),
    sa.Column('credential_id', sa.String(length=1400), nullable=False),
    sa.Column('public_key', sa.LargeBinary(), nullable=False),
    sa.Column('sign_count', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_passkeys_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_passkeys')),
    sa.UniqueConstraint('credential_id', name=op.f('uq_passkeys_credential_id'))
    )
    with op.batch_alter_table('passkeys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_passkeys_user_id'), ['user_id'], unique=False)
    op.create_table('one_time_links',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.String(length=36), nullable=False),
    sa.Column('purpose', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('used_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_one_time_links_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_one_time_links')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_one_time_links_token_hash'))
    )
    with op.batch_alter_table('one_time_links', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_one_time_links_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index('ix_one_time_links_user_id_purpose', ['user_id', 'purpose'], unique=False)


def downgrade():
    with op.batch_alter_table('passkeys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_passkeys_user_id'))
    op.drop_table('passkeys')
    with op.batch_alter_table('recovery_codes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_recovery_codes_user_id'))
    op.drop_table('recovery_codes')
    op.drop_table('totp_factors')
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.drop_column('amr')
    with op.batch_alter_table('authorization_codes', schema=None) as batch_op:
        batch_op.drop_column('amr')
    with op.batch_alter_table('login_sessions', schema=None) as batch_op:
        batch_op.drop_column('amr')
    with op.batch_alter_table('one_time_links', schema=None) as batch_op:
        batch_op.drop_index('ix_one_time_links_user_id_purpose')
        batch_op.drop_index(batch_op.f('ix_one_time_links_expires_at'))

    op.drop_table('one_time_links')
    with op.batch_alter_table('login_sessions', schema=None) as batch_op:
        batch_op.drop_column('last_seen_at')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('suspended_at')
