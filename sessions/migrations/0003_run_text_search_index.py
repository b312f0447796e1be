"""The full-text index the conversation search uses on PostgreSQL (sessions/search.py).

A GIN index on the same expression the search filters by (``sessions.search.PG_DOCUMENT``,
copied here so this migration never changes under later edits of that module). SQLite searches
with LIKE and gets no index.
"""
from django.db import migrations

DOCUMENT = "to_tsvector('simple', left(coalesce(input ->> 'input_content', ''), 50000) || ' ' || left(content, 50000))"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS agno_runs_search ON agno_runs USING gin (({DOCUMENT}))")


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS agno_runs_search")


class Migration(migrations.Migration):

    dependencies = [
        ("agno_sessions", "0002_run_feedback"),
    ]

    operations = [
        migrations.RunPython(create_index, drop_index, elidable=False),
    ]
