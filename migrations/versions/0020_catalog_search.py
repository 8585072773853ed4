"""catalog search: folded names, text indexes, profile figures, collaborators from an index

- `search_key` on profiles, tracks and albums: the name or title folded (lower case, no accents,
  no punctuation, one space between words and at each end; app/models/catalog.py `fold`, copied
  here so the migration never imports application code), with a B-tree for exact and prefix
  matches (bytewise, `COLLATE "C"`, on PostgreSQL).
- The text index of each: on PostgreSQL `pg_trgm` GIN (fragments, fuzzy variants) and a GIN over
  `to_tsvector('simple', search_key)` (words); on SQLite an FTS5 trigram table over the key
  (`<table>_search`, external content, kept in step by triggers). A later migration that rebuilds
  one of these tables on SQLite (a batch alter) must drop and recreate its search table and
  triggers (`_sqlite_search`) - the rebuild drops the triggers and renumbers the rows.
- `popularity` ordering indexes (popularity DESC, id), for the most popular matches first.
- profiles' `popularity`, `credit_count`, `collaborator_count`, `common_roles`: computed when the
  catalog is loaded (the store's `refresh_profile_stats`), filled here for a catalog already there.
- credits (track_id, profile_id) in place of (track_id): collaborators read from the index alone.
- `profile_collaborators`: a prolific profile's collaborators, counted when the catalog is loaded
  (filled by the store's `refresh_profile_stats`; `flask catalog refresh` for a catalog already there).

PostgreSQL: `CREATE EXTENSION pg_trgm` needs no superuser (a trusted extension since PostgreSQL
13: the database owner may create it); `.ci/run` creates it as the superuser anyway.

Revision ID: 0020_catalog_search
Revises: 0019_agent_clients_resources
Create Date: 2026-11-27

"""
import json
import unicodedata

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0020_catalog_search'
down_revision = '0019_agent_clients_resources'
branch_labels = None
depends_on = None

KEY_LENGTH = 320
NAMED = {"profiles": "name", "tracks": "title", "albums": "title"}
_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
_JOINERS = str.maketrans({"'": None, "\u2019": None, "`": None})


def fold(text):
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_JOINERS))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).translate(_LETTERS)
    words = "".join(ch if ch.isalnum() else " " for ch in plain).split()
    return f" {' '.join(words)} " if words else ""


def _key_type():
    return sa.String(KEY_LENGTH).with_variant(sa.String(KEY_LENGTH, collation="C"), "postgresql")


def _sqlite_search(table):
    """The FTS5 trigram table over `table`'s search key, filled, and the triggers that keep it so."""
    fts = f"{table}_search"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5(search_key, content='{table}', content_rowid='rowid', tokenize='trigram')",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, search_key) VALUES (new.rowid, new.search_key); END",
        f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, search_key) VALUES ('delete', old.rowid, old.search_key); END",
        f"CREATE TRIGGER {fts}_update AFTER UPDATE OF search_key ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, search_key) VALUES ('delete', old.rowid, old.search_key); "
        f"INSERT INTO {fts}(rowid, search_key) VALUES (new.rowid, new.search_key); END",
    ]


def upgrade():
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    for table in NAMED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('search_key', _key_type(), nullable=False, server_default=''))
    with op.batch_alter_table('profiles', schema=None) as batch_op:
        batch_op.add_column(sa.Column('popularity', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('credit_count', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('collaborator_count', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('common_roles', sa.JSON(), server_default='[]', nullable=False))

    for table, column in NAMED.items():
        rows = bind.execute(sa.text(f"SELECT id, {column} FROM {table}")).all()
        if rows:
            bind.execute(
                sa.text(f"UPDATE {table} SET search_key = :key WHERE id = :id"),
                [{"id": row_id, "key": fold(name or "")[:KEY_LENGTH]} for row_id, name in rows],
            )
    _fill_profile_figures(bind)

    for table in NAMED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(batch_op.f(f'ix_{table}_search_key'), ['search_key'], unique=False)
            batch_op.create_index(f'ix_{table}_popularity', [sa.text('popularity DESC'), 'id'], unique=False)
    with op.batch_alter_table('credits', schema=None) as batch_op:
        batch_op.create_index('ix_credits_track_profile', ['track_id', 'profile_id'], unique=False)
        batch_op.drop_index(batch_op.f('ix_credits_track_id'))

    op.create_table('profile_collaborators',
    sa.Column('profile_id', sa.String(length=36), nullable=False),
    sa.Column('collaborator_id', sa.String(length=36), nullable=False),
    sa.Column('shared', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['collaborator_id'], ['profiles.id'], name=op.f('fk_profile_collaborators_collaborator_id_profiles'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['profile_id'], ['profiles.id'], name=op.f('fk_profile_collaborators_profile_id_profiles'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('profile_id', 'collaborator_id', name=op.f('pk_profile_collaborators'))
    )
    with op.batch_alter_table('profile_collaborators', schema=None) as batch_op:
        batch_op.create_index('ix_profile_collaborators_page', ['profile_id', sa.text('shared DESC'), 'collaborator_id'], unique=False)

    if postgres:
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        for table in NAMED:
            op.execute(f"CREATE INDEX ix_{table}_search_trgm ON {table} USING gin (search_key gin_trgm_ops)")
            op.execute(f"CREATE INDEX ix_{table}_search_words ON {table} USING gin (to_tsvector('simple', search_key))")
    else:
        for table in NAMED:
            for statement in _sqlite_search(table):
                op.execute(statement)


def _fill_profile_figures(bind):
    """The figures search shows for a profile, for a catalog already loaded (small: the demo's)."""
    bind.execute(sa.text(
        "UPDATE profiles SET "
        "credit_count = (SELECT count(*) FROM credits c WHERE c.profile_id = profiles.id), "
        "popularity = COALESCE((SELECT max(t.popularity) FROM credits c JOIN tracks t ON t.id = c.track_id "
        "WHERE c.profile_id = profiles.id), 0), "
        "collaborator_count = (SELECT count(DISTINCT o.profile_id) FROM credits c JOIN credits o "
        "ON o.track_id = c.track_id AND o.profile_id <> c.profile_id WHERE c.profile_id = profiles.id)"
    ))
    held = {}
    for profile_id, role, count in bind.execute(sa.text(
        "SELECT c.profile_id, r.name, count(*) FROM credits c "
        "JOIN credit_role_links l ON l.credit_id = c.id JOIN credit_roles r ON r.id = l.role_id "
        "GROUP BY c.profile_id, r.name"
    )):
        held.setdefault(profile_id, []).append((-count, role))
    if held:
        bind.execute(
            sa.text("UPDATE profiles SET common_roles = :roles WHERE id = :id"),
            [{"id": pid, "roles": json.dumps([role for _, role in sorted(roles)[:3]])} for pid, roles in held.items()],
        )


def downgrade():
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table in NAMED:
            op.execute(f"DROP INDEX IF EXISTS ix_{table}_search_trgm")
            op.execute(f"DROP INDEX IF EXISTS ix_{table}_search_words")
    else:
        for table in NAMED:
            for trigger in ("insert", "delete", "update"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_search_{trigger}")
            op.execute(f"DROP TABLE IF EXISTS {table}_search")
    op.drop_table('profile_collaborators')
    with op.batch_alter_table('credits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_credits_track_id'), ['track_id'], unique=False)
        batch_op.drop_index('ix_credits_track_profile')
    for table in NAMED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f'ix_{table}_popularity')
            batch_op.drop_index(batch_op.f(f'ix_{table}_search_key'))
            batch_op.drop_column('search_key')
    with op.batch_alter_table('profiles', schema=None) as batch_op:
        batch_op.drop_column('common_roles')
        batch_op.drop_column('collaborator_count')
        batch_op.drop_column('credit_count')
        batch_op.drop_column('popularity')
