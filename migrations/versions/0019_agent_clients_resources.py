"""agent clients and resource indicators: AI agents that sign members in to the tool server

`clients.registration`: how an app came to be known - `console` (registered by a developer,
billed), or `metadata_document` (an MCP client whose client id is the https URL of its Client ID
Metadata Document, fetched and cached by the provider: app/services/agent_clients.py; not billed);
`clients.document_fetched_at`: when that document was last read (the cache's age). Client ids
widen to 255 characters (a document's URL). `authorization_codes.resource` and `tokens.resource`:
the resource (RFC 8707) a code was asked for and its tokens are bound to - the tool server's URL,
or NULL for the provider's own APIs (userinfo, /v1).

Revision ID: 0019_agent_clients_resources
Revises: 0017_unique_passkey_names
Create Date: 2026-11-27

"""

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = "0019_agent_clients_resources"
down_revision = "0017_unique_passkey_names"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.alter_column("client_id", existing_type=sa.String(length=64), type_=sa.String(length=255))
        batch_op.add_column(sa.Column("registration", sa.String(length=24), nullable=False, server_default="console"))
        batch_op.add_column(sa.Column("document_fetched_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("authorization_codes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resource", sa.String(length=500), nullable=True))
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resource", sa.String(length=500), nullable=True))


def downgrade():
    # Tokens bound to another resource cannot become tokens for the provider's own APIs.
    op.execute("DELETE FROM tokens WHERE resource IS NOT NULL")
    op.execute("DELETE FROM authorization_codes WHERE resource IS NOT NULL")
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_column("resource")
    with op.batch_alter_table("authorization_codes", schema=None) as batch_op:
        batch_op.drop_column("resource")
    op.execute("DELETE FROM clients WHERE registration <> 'console'")
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.drop_column("document_fetched_at")
        batch_op.drop_column("registration")
        batch_op.alter_column("client_id", existing_type=sa.String(length=255), type_=sa.String(length=64))
