"""catalog words on SQLite: the vocabulary of the catalog's names, for the typo tier of search

SQLite answered a one-typo search from its trigram tables alone, one lookup per typo pattern (31
for "midnigth"), and a pattern whose letters keep the keyword's common trigrams ("midnigh_")
reads every name holding them: fifteen of the patterns each read the same "midnight" names. It
now answers typos as PostgreSQL does (migration 0026, app/store/catalog_vocabulary.py): the
catalog's words one typo from the keyword's first, from `catalog_words` through its own trigram
table, then only the names holding one of them.

`catalog_words` holds each word of every profile's, track's and album's folded name once (a
rowid table: the trigram table indexes it as its external content). Row triggers on the three
tables add the words of a name inserted or renamed; words are never taken out by them (a name
renamed leaves its old words, which then find nothing), and the trigram table follows
`catalog_words` by its own triggers. A name is parted into its words with `json_each` over the
key quoted as JSON (a trigger body cannot hold a recursive query). Filled here from the names
already written. Nothing changes on PostgreSQL (0026 made its vocabulary).

Revision ID: 0027_catalog_words_sqlite
Revises: 0026_catalog_words
Create Date: 2026-11-28

"""

from alembic import op


# revision identifiers, used by Alembic.
revision = "0027_catalog_words_sqlite"
down_revision = "0026_catalog_words"
branch_labels = None
depends_on = None

TABLES = ("profiles", "tracks", "albums")
# The words of a folded key (" sweet home "), as rows of `value`.
WORDS = "json_each('[' || replace(json_quote(trim({key})), ' ', '\",\"') || ']')"
FTS = "catalog_words_search"


def upgrade():
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE catalog_words (word TEXT NOT NULL UNIQUE)")
    op.execute(
        f"CREATE VIRTUAL TABLE {FTS} USING fts5(word, content='catalog_words', content_rowid='rowid', tokenize='trigram')"
    )
    op.execute(
        f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON catalog_words BEGIN "
        f"INSERT INTO {FTS}(rowid, word) VALUES (new.rowid, new.word); END"
    )
    op.execute(
        f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON catalog_words BEGIN "
        f"INSERT INTO {FTS}({FTS}, rowid, word) VALUES ('delete', old.rowid, old.word); END"
    )
    for table in TABLES:
        added = f"INSERT OR IGNORE INTO catalog_words (word) SELECT value FROM {WORDS.format(key='new.search_key')} WHERE value <> ''; "
        op.execute(f"CREATE TRIGGER {table}_words_insert AFTER INSERT ON {table} BEGIN {added}END")
        op.execute(f"CREATE TRIGGER {table}_words_update AFTER UPDATE OF search_key ON {table} BEGIN {added}END")
        op.execute(
            f"INSERT OR IGNORE INTO catalog_words (word) SELECT DISTINCT value FROM {table}, "
            f"{WORDS.format(key=f'{table}.search_key')} WHERE value <> ''"
        )


def downgrade():
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        for event in ("insert", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS {table}_words_{event}")
    op.execute(f"DROP TABLE IF EXISTS {FTS}")
    op.execute("DROP TABLE IF EXISTS catalog_words")
