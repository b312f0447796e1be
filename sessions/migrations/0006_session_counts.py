"""Each owner's number of sessions, kept by the database (``sessions.models.SessionCount``).

Triggers on ``agno_sessions`` move an owner's count when a session is inserted, deleted or given
to another owner, whatever wrote it, in the writer's own transaction. The counts are then filled
from the sessions already there: on PostgreSQL ``CREATE TRIGGER`` locks the table against writers
until this migration commits, so no session is counted twice or missed; SQLite has one writer.

An increment inserts the owner's row or adds one to it. A decrement is a plain UPDATE (a count row
that is gone stays gone: emptying both tables, in any order, leaves no negative count), and an
owner's row is deleted with their last session, so erasing a user's data leaves no row naming them.
"""
from django.db import migrations, models

BACKFILL = (
    "INSERT INTO agno_session_counts (user_id, sessions) "
    "SELECT user_id, COUNT(*) FROM agno_sessions WHERE user_id IS NOT NULL GROUP BY user_id"
)

SQLITE_INCREMENT = (
    "INSERT INTO agno_session_counts (user_id, sessions) VALUES (NEW.user_id, 1) "
    "ON CONFLICT (user_id) DO UPDATE SET sessions = sessions + 1;"
)
SQLITE_DECREMENT = (
    "UPDATE agno_session_counts SET sessions = sessions - 1 WHERE user_id = OLD.user_id; "
    "DELETE FROM agno_session_counts WHERE user_id = OLD.user_id AND sessions <= 0;"
)
SQLITE_UP = [
    f"""CREATE TRIGGER agno_sessions_count_insert AFTER INSERT ON agno_sessions
        WHEN NEW.user_id IS NOT NULL BEGIN {SQLITE_INCREMENT} END""",
    f"""CREATE TRIGGER agno_sessions_count_delete AFTER DELETE ON agno_sessions
        WHEN OLD.user_id IS NOT NULL BEGIN {SQLITE_DECREMENT} END""",
    f"""CREATE TRIGGER agno_sessions_count_owner AFTER UPDATE OF user_id ON agno_sessions
        WHEN OLD.user_id IS NOT NEW.user_id BEGIN
          {SQLITE_DECREMENT}
          INSERT INTO agno_session_counts (user_id, sessions) SELECT NEW.user_id, 1 WHERE NEW.user_id IS NOT NULL
          ON CONFLICT (user_id) DO UPDATE SET sessions = sessions + 1;
        END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS agno_sessions_count_owner",
    "DROP TRIGGER IF EXISTS agno_sessions_count_delete",
    "DROP TRIGGER IF EXISTS agno_sessions_count_insert",
]

PG_UP = [
    """CREATE FUNCTION agno_sessions_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' AND OLD.user_id IS NOT NULL THEN
        UPDATE agno_session_counts SET sessions = sessions - 1 WHERE user_id = OLD.user_id;
        DELETE FROM agno_session_counts WHERE user_id = OLD.user_id AND sessions <= 0;
      END IF;
      IF TG_OP <> 'DELETE' AND NEW.user_id IS NOT NULL THEN
        INSERT INTO agno_session_counts (user_id, sessions) VALUES (NEW.user_id, 1)
        ON CONFLICT (user_id) DO UPDATE SET sessions = agno_session_counts.sessions + 1;
      END IF;
      RETURN NULL;
    END
    $$""",
    """CREATE TRIGGER agno_sessions_count_insert AFTER INSERT ON agno_sessions
       FOR EACH ROW WHEN (NEW.user_id IS NOT NULL) EXECUTE FUNCTION agno_sessions_count()""",
    """CREATE TRIGGER agno_sessions_count_delete AFTER DELETE ON agno_sessions
       FOR EACH ROW WHEN (OLD.user_id IS NOT NULL) EXECUTE FUNCTION agno_sessions_count()""",
    # Django's save() writes every column: only a changed owner moves the counts.
    """CREATE TRIGGER agno_sessions_count_owner AFTER UPDATE OF user_id ON agno_sessions
       FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION agno_sessions_count()""",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS agno_sessions_count_owner ON agno_sessions",
    "DROP TRIGGER IF EXISTS agno_sessions_count_delete ON agno_sessions",
    "DROP TRIGGER IF EXISTS agno_sessions_count_insert ON agno_sessions",
    "DROP FUNCTION IF EXISTS agno_sessions_count()",
]


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = PG_UP if vendor == "postgresql" else SQLITE_UP if vendor == "sqlite" else None
    if statements is None:
        raise NotImplementedError(f"session counts need triggers written for {vendor}")
    for statement in [*statements, BACKFILL]:
        schema_editor.execute(statement)


def drop_triggers(apps, schema_editor):
    for statement in PG_DOWN if schema_editor.connection.vendor == "postgresql" else SQLITE_DOWN:
        schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("agno_sessions", "0005_run_origin_and_branches"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionCount",
            fields=[
                ("user_id", models.CharField(max_length=255, primary_key=True, serialize=False)),
                ("sessions", models.BigIntegerField(default=0)),
            ],
            options={
                "db_table": "agno_session_counts",
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers, elidable=False),
    ]
