"""An index on ``agno_runs.updated_at``: the metrics refresh reads the runs changed since its
watermark, which without it is a scan of the whole table (0.7 s at 100,000 runs, bench/README.md).

On PostgreSQL the index is built CONCURRENTLY, so a deployment with a large runs table keeps
accepting runs while it is built (hence a non-atomic migration); SQLite builds it as usual.
"""
from django.db import migrations, models

INDEX = models.Index(fields=["updated_at"], name="run_updated")


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS run_updated ON agno_runs (updated_at)")
    else:
        schema_editor.add_index(apps.get_model("agno_sessions", "Run"), INDEX)


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS run_updated")
    else:
        schema_editor.remove_index(apps.get_model("agno_sessions", "Run"), INDEX)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("agno_sessions", "0003_run_text_search_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="run", index=INDEX)],
            database_operations=[migrations.RunPython(create_index, drop_index, elidable=False)],
        ),
    ]
