"""The search indexes, which differ by database.

PostgreSQL: an HNSW index over the embeddings (cosine, pgvector) and a GIN index over the chunks'
text (``knowledge.services.search.PG_DOCUMENT``, copied here so this migration never changes
under later edits of that module).

SQLite: an FTS5 table over the chunks' text, kept in step with the chunk table by triggers
(external content: the text is stored once, in the chunk table). Vectors are compared exactly,
in process: SQLite has no vector index.
"""
from django.db import migrations

PG_DOCUMENT = "to_tsvector('english', text)"

SQLITE_UP = [
    "CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(text, content='knowledge_chunks', content_rowid='id', tokenize='porter unicode61')",
    """CREATE TRIGGER knowledge_chunks_fts_insert AFTER INSERT ON knowledge_chunks BEGIN
         INSERT INTO knowledge_chunks_fts(rowid, text) VALUES (new.id, new.text);
       END""",
    """CREATE TRIGGER knowledge_chunks_fts_delete AFTER DELETE ON knowledge_chunks BEGIN
         INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
       END""",
    """CREATE TRIGGER knowledge_chunks_fts_update AFTER UPDATE OF text ON knowledge_chunks BEGIN
         INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
         INSERT INTO knowledge_chunks_fts(rowid, text) VALUES (new.id, new.text);
       END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS knowledge_chunks_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_chunks_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_chunks_fts_insert",
    "DROP TABLE IF EXISTS knowledge_chunks_fts",
]


def create_indexes(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS knowledge_chunks_embedding_hnsw ON knowledge_chunks "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS knowledge_chunks_text_search ON knowledge_chunks USING gin (({PG_DOCUMENT}))")
    elif vendor == "sqlite":
        for statement in SQLITE_UP:
            schema_editor.execute(statement)


def drop_indexes(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS knowledge_chunks_embedding_hnsw")
        schema_editor.execute("DROP INDEX IF EXISTS knowledge_chunks_text_search")
    elif vendor == "sqlite":
        for statement in SQLITE_DOWN:
            schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes, elidable=False),
    ]
