"""api keys: secret and publishable keys, the api_requests meter, the catalog API's lookups

Keys (`api_keys`, stored by SHA-256), the meter (`api_usage`: one counter per key per UTC day),
and what the catalog API looks tracks and albums up by: `track_isrcs` (filled here from each
track's ISRC list), `albums.spotify_id`, `albums.popularity` (filled from its most popular
credited track) and an index on `tracks.spotify_id`.

Revision ID: 0008_api_keys
Revises: 0007_interaction_member
Create Date: 2026-11-24

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0008_api_keys'
down_revision = '0007_interaction_member'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('api_keys',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('owner_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=120), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('plan', sa.String(length=16), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('secret_hash', sa.String(length=64), nullable=False),
    sa.Column('previous_secret_hash', sa.String(length=64), nullable=True),
    sa.Column('previous_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('domains', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('rotated_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_api_keys_owner_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('secret_hash', name=op.f('uq_api_keys_secret_hash'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_owner_id'), ['owner_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_api_keys_previous_secret_hash'), ['previous_secret_hash'], unique=False)

    op.create_table('api_usage',
    sa.Column('key_id', sa.String(length=36), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['key_id'], ['api_keys.id'], name=op.f('fk_api_usage_key_id_api_keys'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('key_id', 'day', name=op.f('pk_api_usage'))
    )

    op.create_table('track_isrcs',
    sa.Column('isrc', sa.String(length=16), nullable=False),
    sa.Column('track_id', sa.String(length=36), nullable=False),
    sa.ForeignKeyConstraint(['track_id'], ['tracks.id'], name=op.f('fk_track_isrcs_track_id_tracks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('isrc', 'track_id', name=op.f('pk_track_isrcs'))
    )
    with op.batch_alter_table('track_isrcs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_track_isrcs_track_id'), ['track_id'], unique=False)

    with op.batch_alter_table('albums', schema=None) as batch_op:
        batch_op.add_column(sa.Column('spotify_id', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('popularity', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index(batch_op.f('ix_albums_spotify_id'), ['spotify_id'], unique=False)

    with op.batch_alter_table('tracks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tracks_spotify_id'), ['spotify_id'], unique=False)

    # Existing catalogs: fill the ISRC index from each track's list, and each album's popularity
    # from its most popular credited track.
    bind = op.get_bind()
    tracks = sa.table('tracks', sa.column('id', sa.String), sa.column('isrcs', sa.JSON))
    isrcs = sa.table('track_isrcs', sa.column('isrc', sa.String), sa.column('track_id', sa.String))
    rows, seen = [], set()
    for track_id, values in bind.execute(sa.select(tracks.c.id, tracks.c.isrcs)):
        for value in values or []:
            if (value, track_id) not in seen:
                seen.add((value, track_id))
                rows.append({'isrc': value, 'track_id': track_id})
    for start in range(0, len(rows), 5000):
        bind.execute(sa.insert(isrcs), rows[start:start + 5000])
    op.execute(
        "UPDATE albums SET popularity = COALESCE((SELECT MAX(tracks.popularity) FROM credits "
        "JOIN tracks ON tracks.id = credits.track_id WHERE credits.album_id = albums.id), 0)"
    )


def downgrade():
    with op.batch_alter_table('tracks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tracks_spotify_id'))
    with op.batch_alter_table('albums', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_albums_spotify_id'))
        batch_op.drop_column('popularity')
        batch_op.drop_column('spotify_id')
    with op.batch_alter_table('track_isrcs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_track_isrcs_track_id'))
    op.drop_table('track_isrcs')
    op.drop_table('api_usage')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_previous_secret_hash'))
        batch_op.drop_index(batch_op.f('ix_api_keys_owner_id'))
    op.drop_table('api_keys')
