"""Where each run and session came from (``origin``), and a conversation's branches
(``previous_run_id``, ``branch_active``).

Stored runs are filled in as the chat showed them: an edit (``forked_from_run_id``) or a
regeneration (``regenerated_from``) is a sibling of its source, any other run follows the run
before it, and the active branch takes the newest version at each branch point. A session named
``eval_...`` was an eval's, one a schedule fired into a schedule's; the rest were started by
people (recorded as ``api``: the chat and the API cannot be told apart afterwards).
"""
from django.db import migrations, models


def backfill(apps, schema_editor):
    Session = apps.get_model("agno_sessions", "Session")
    Run = apps.get_model("agno_sessions", "Run")
    ScheduleRun = apps.get_model("scheduler", "ScheduleRun")
    sessions = Session._base_manager
    sessions.filter(session_id__startswith="eval_").update(origin="eval")
    fired = ScheduleRun._base_manager.exclude(session_id=None).values_list("session_id", flat=True).distinct()
    sessions.filter(session_id__in=list(fired)).update(origin="schedule")
    runs = Run._base_manager
    for origin in ("eval", "schedule"):
        runs.filter(session__origin=origin).update(origin=origin)
    workflow_runs = runs.filter(run_type="workflow").values_list("run_id", flat=True)
    runs.exclude(parent_run_id=None).filter(parent_run_id__in=list(workflow_runs)).update(origin="workflow_step")
    runs.exclude(parent_run_id=None).exclude(origin="workflow_step").update(origin="team_member")
    top = runs.filter(parent_run_id=None).order_by("session_id", "run_index").values_list("session_id", "run_id", "status", "run_data")
    session, rows = None, []
    for row in top.iterator():
        if row[0] != session and rows:
            _tree(runs, rows)
            rows = []
        session = row[0]
        rows.append(row)
    if rows:
        _tree(runs, rows)


def _tree(runs, rows):
    """One session's top-level runs (in order) as a tree, the newest version active."""
    previous, last = {}, None
    for _session, run_id, _status, data in rows:
        data = data if isinstance(data, dict) else {}
        source = data.get("forked_from_run_id") or data.get("regenerated_from")
        previous[run_id] = previous[source] if source in previous else last
        last = run_id
    children = {}
    for _session, run_id, status, _data in rows:
        if status != "REGENERATED":
            children.setdefault(previous[run_id], []).append(run_id)
    active, node = set(), None
    while node in children and len(active) < len(rows):
        node = children[node][-1]
        active.add(node)
    linked = [runs.model(run_id=run_id, previous_run_id=before) for run_id, before in previous.items() if before is not None]
    runs.bulk_update(linked, ["previous_run_id"], batch_size=500)
    inactive = [run_id for run_id in previous if run_id not in active]
    if inactive:
        runs.filter(pk__in=inactive).update(branch_active=False)


class Migration(migrations.Migration):

    dependencies = [
        ('agno_sessions', '0004_run_updated_index'),
        ('scheduler', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='branch_active',
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name='run',
            name='origin',
            field=models.CharField(choices=[('chat', 'Chat'), ('api', 'Api'), ('eval', 'Eval'), ('schedule', 'Schedule'), ('workflow_step', 'Workflow Step'), ('team_member', 'Team Member')], default='api', max_length=16),
        ),
        migrations.AddField(
            model_name='run',
            name='previous_run_id',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='session',
            name='origin',
            field=models.CharField(choices=[('chat', 'Chat'), ('api', 'Api'), ('eval', 'Eval'), ('schedule', 'Schedule'), ('workflow_step', 'Workflow Step'), ('team_member', 'Team Member')], default='api', max_length=16),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['user_id', 'origin', '-updated_at'], name='session_user_origin_updated'),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
