"""rosters and workspace keys: the profiles a member represents, and keys that reach only them

`rosters` (a member's named lists) and `roster_profiles` (a profile on a roster; its primary key is
the key door's reach check), and `api_keys.roster_id`: the roster a workspace key (`mwk_`) reaches.
A deleted roster's keys are revoked first (app/services/rosters.py); the column is then NULL.

Revision ID: 0015_workspace_keys_rosters
Revises: 0014_email_a_labels
Create Date: 2026-11-28

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0015_workspace_keys_rosters'
down_revision = '0014_email_a_labels'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('rosters',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('owner_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_rosters_owner_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rosters')),
    sa.UniqueConstraint('owner_id', 'name', name='uq_rosters_owner_name')
    )
    with op.batch_alter_table('rosters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rosters_owner_id'), ['owner_id'], unique=False)

    op.create_table('roster_profiles',
    sa.Column('roster_id', sa.String(length=36), nullable=False),
    sa.Column('profile_id', sa.String(length=36), nullable=False),
    sa.Column('added_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['profile_id'], ['profiles.id'], name=op.f('fk_roster_profiles_profile_id_profiles'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['roster_id'], ['rosters.id'], name=op.f('fk_roster_profiles_roster_id_rosters'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('roster_id', 'profile_id', name=op.f('pk_roster_profiles'))
    )
    with op.batch_alter_table('roster_profiles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_roster_profiles_profile_id'), ['profile_id'], unique=False)

    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.add_column(sa.Column('roster_id', sa.String(length=36), nullable=True))
        batch_op.create_index(batch_op.f('ix_api_keys_roster_id'), ['roster_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_api_keys_roster_id_rosters'), 'rosters', ['roster_id'], ['id'], ondelete='SET NULL')


def downgrade():
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_api_keys_roster_id_rosters'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_api_keys_roster_id'))
        batch_op.drop_column('roster_id')
    # Workspace keys cannot outlive the rosters they reach: revoke the ones left.
    op.execute("UPDATE api_keys SET revoked_at = CURRENT_TIMESTAMP WHERE kind = 'workspace' AND revoked_at IS NULL")
    with op.batch_alter_table('roster_profiles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_roster_profiles_profile_id'))
    op.drop_table('roster_profiles')
    with op.batch_alter_table('rosters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rosters_owner_id'))
    op.drop_table('rosters')
