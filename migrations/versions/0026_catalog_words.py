"""catalog words: the vocabulary of the catalog's names, for the typo tier of search

A one-typo search on PostgreSQL first finds the catalog's words one typo from the keyword's, then
reads only the names holding one of them (app/store/catalog_vocabulary.py). `catalog_words` holds
each word of every profile's, track's and album's folded name once (`search_key`, bytewise "C"
order: a variant's letters before its wildcard are a range of the primary key; a trigram index
answers a variant whose wildcard comes first). A statement-level trigger on each of the three
tables adds the words of the rows a statement inserted or updated (one INSERT ... ON CONFLICT DO
NOTHING per statement, a COPY batch included); words are never taken out (a name renamed leaves
its old words, which then find nothing). Filled here from the names already written. SQLite
answers typos from its trigram tables (migration 0020); nothing is created there.

Revision ID: 0026_catalog_words
Revises: 0025_catalog_name_statistics
Create Date: 2026-11-27

"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0026_catalog_words'
down_revision = '0025_catalog_name_statistics'
branch_labels = None
depends_on = None

TABLES = ('profiles', 'tracks', 'albums')
WORDS = "SELECT DISTINCT word FROM {source}, unnest(string_to_array(btrim({source}.search_key), ' ')) AS word WHERE word <> ''"


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute('CREATE TABLE catalog_words (word text COLLATE "C" PRIMARY KEY)')
    op.execute("CREATE INDEX ix_catalog_words_trgm ON catalog_words USING gin (word gin_trgm_ops)")
    op.execute(
        f"""
        CREATE OR REPLACE FUNCTION credits_id_catalog_words() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO catalog_words (word) {WORDS.format(source='named')} ON CONFLICT DO NOTHING;
            RETURN NULL;
        END
        $$
        """
    )
    for table in TABLES:
        for event in ('INSERT', 'UPDATE'):
            op.execute(
                f"CREATE TRIGGER {table}_words_{event.lower()} AFTER {event} ON {table} "
                "REFERENCING NEW TABLE AS named FOR EACH STATEMENT EXECUTE FUNCTION credits_id_catalog_words()"
            )
        op.execute(f"INSERT INTO catalog_words (word) {WORDS.format(source=table)} ON CONFLICT DO NOTHING")
    op.execute("ANALYZE catalog_words")


def downgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in TABLES:
        for event in ('insert', 'update'):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_words_{event} ON {table}")
    op.execute("DROP FUNCTION IF EXISTS credits_id_catalog_words()")
    op.execute("DROP TABLE IF EXISTS catalog_words")
