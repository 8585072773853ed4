"""unique passkey names per member: "Remove passkey Laptop" must name one passkey

A member's passkeys are told apart by name on the account page, in the removal confirmation and in
security notices, so two of one member's passkeys may not share a name. Existing duplicates are
renamed first ("Laptop", "Laptop 2", ...: the oldest keeps its name), then the constraint is added.

Revision ID: 0017_unique_passkey_names
Revises: 0016_billing_accounts
Create Date: 2026-11-27

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0017_unique_passkey_names'
down_revision = '0016_billing_accounts'
branch_labels = None
depends_on = None


def upgrade():
    bind = op.get_bind()
    passkeys = sa.table('passkeys', sa.column('id', sa.Integer), sa.column('user_id', sa.String),
                        sa.column('name', sa.String), sa.column('created_at', sa.DateTime))
    rows = bind.execute(sa.select(passkeys.c.id, passkeys.c.user_id, passkeys.c.name)
                        .order_by(passkeys.c.user_id, passkeys.c.created_at, passkeys.c.id)).all()
    taken: dict[str, set[str]] = {}
    for row in rows:
        names = taken.setdefault(row.user_id, set())
        name, n = row.name, 1
        while name.lower() in names:
            n += 1
            suffix = f" {n}"
            name = row.name[:64 - len(suffix)] + suffix
        names.add(name.lower())
        if name != row.name:
            bind.execute(passkeys.update().where(passkeys.c.id == row.id).values(name=name))
    with op.batch_alter_table('passkeys', schema=None) as batch_op:
        batch_op.create_unique_constraint('uq_passkeys_user_name', ['user_id', 'name'])


def downgrade():
    with op.batch_alter_table('passkeys', schema=None) as batch_op:
        batch_op.drop_constraint('uq_passkeys_user_name', type_='unique')
