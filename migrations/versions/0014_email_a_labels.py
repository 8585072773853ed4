"""email a-labels: an internationalized domain in a stored address is kept in its ASCII form

Addresses are stored, compared and mailed in one form (app/core/email_address.py): lower-cased, with an
internationalized domain as its A-label (`ana@bücher.example` is `ana@xn--bcher-kva.example`).
Until now such a domain was stored as typed, so a member's row and the form a sign-in now looks
up would differ: the members' addresses and the pending changes of address (`one_time_links`)
are rewritten here. A row whose domain IDNA cannot encode, or whose new form another member
already has, is left as it was. No schema change; the downgrade keeps the ASCII form, which
the old code also mails to.

Revision ID: 0014_email_a_labels
Revises: 0013_webauthn_challenges
Create Date: 2026-11-27

"""
import idna
import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision = '0014_email_a_labels'
down_revision = '0013_webauthn_challenges'
branch_labels = None
depends_on = None


def a_label_form(address):
    """`address` with its domain as an A-label, or None when it has none (or is ASCII already)."""
    if address.isascii():
        return None
    local, at, domain = address.rpartition('@')
    if not at:
        return None
    try:
        return f"{local}@{idna.encode(domain, uts46=True).decode('ascii')}"
    except (idna.IDNAError, UnicodeError):
        return None


def upgrade():
    conn = op.get_bind()
    users = sa.table('users', sa.column('id', sa.String), sa.column('email', sa.String))
    taken = {row.email for row in conn.execute(sa.select(users.c.email))}
    for row in conn.execute(sa.select(users.c.id, users.c.email)).fetchall():
        new = a_label_form(row.email)
        if new is not None and new not in taken:
            conn.execute(users.update().where(users.c.id == row.id).values(email=new))
            taken.add(new)
    links = sa.table('one_time_links', sa.column('id', sa.Integer), sa.column('email', sa.String))
    for row in conn.execute(sa.select(links.c.id, links.c.email)).fetchall():
        new = a_label_form(row.email or '')
        if new is not None:
            conn.execute(links.update().where(links.c.id == row.id).values(email=new))


def downgrade():
    pass
