"""webauthn challenges: a passkey ceremony's challenge kept server-side, answered once

Until now a ceremony's challenge rode in the browser's signed session cookie, so an old copy of
the cookie offered it again. Now the session keeps a random handle and this table the SHA-256 of
the handle and of the challenge, the ceremony and its member; the answer deletes the row
(DELETE ... RETURNING). Rows nobody answered are purged by `flask purge-expired`.

Revision ID: 0013_webauthn_challenges
Revises: 0012_app_change_notices
Create Date: 2026-11-27

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0013_webauthn_challenges'
down_revision = '0012_app_change_notices'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('webauthn_challenges',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('handle_hash', sa.String(length=64), nullable=False),
    sa.Column('challenge_hash', sa.String(length=64), nullable=False),
    sa.Column('purpose', sa.String(length=16), nullable=False),
    sa.Column('user_id', sa.String(length=36), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_webauthn_challenges_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webauthn_challenges')),
    sa.UniqueConstraint('handle_hash', name=op.f('uq_webauthn_challenges_handle_hash'))
    )
    with op.batch_alter_table('webauthn_challenges', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webauthn_challenges_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_webauthn_challenges_user_id'), ['user_id'], unique=False)


def downgrade():
    with op.batch_alter_table('webauthn_challenges', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webauthn_challenges_user_id'))
        batch_op.drop_index(batch_op.f('ix_webauthn_challenges_expires_at'))
    op.drop_table('webauthn_challenges')
