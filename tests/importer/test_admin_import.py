"""The import from the admin (importer.admin, importer.jobs): an operator uploads an Agno SQLite file
or gives a database URL; the import runs as a background job of the queue, its page shows the
progress the job reports and, at the end, the report. The test plays the worker (EMBEDDED_WORKER
off), as tests/metrics/test_console.py does."""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs.models import Job
from jobs.services.jobs import job_cancel, job_progress, job_run
from jobs.services.claims import job_claim
from importer.jobs import IMPORT_JOB, upload_dir
from importer.models import AgnoImport
from sessions.models import Session
from tests.factories import make_session
from tests.importer.counting import source_counts

FIXTURES = Path(__file__).parent / "fixtures"
ADD = reverse("admin:importer_agnoimport_add")
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def worker_is_the_test(settings, tmp_path):
    settings.EMBEDDED_WORKER = False
    settings.VAR_DIR = tmp_path / "var"


def jobs():
    return Job.objects.unscoped("test: the operator's import jobs").filter(job_type=IMPORT_JOB)


def upload(name: str = "agno3_full.db") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FIXTURES / name).read_bytes(), content_type="application/octet-stream")


def page(admin_client, row: AgnoImport) -> str:
    response = admin_client.get(reverse("admin:importer_agnoimport_change", args=[row.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_an_uploaded_file_is_imported_by_a_job_whose_page_shows_progress_then_the_report(admin_client) -> None:
    response = admin_client.post(ADD, {"upload": upload()})
    row = AgnoImport.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("admin:importer_agnoimport_change", args=[row.pk])
    assert (row.status, row.source_label, row.started_by) == ("queued", "upload agno3_full.db", "admin")
    stored = Path(row.upload_path)
    assert stored.parent == upload_dir() and stored.read_bytes() == (FIXTURES / "agno3_full.db").read_bytes()
    assert not Session.all_users.exists()  # the request only queued it

    queued = page(admin_client, row)
    assert "waiting for a worker" in queued and '<meta http-equiv="refresh" content="2">' in queued
    job = job_claim(worker="w1")
    assert job.job_type == IMPORT_JOB and job.payload == {"import_id": row.pk} and job.user_id is None
    job_progress(job=job, worker="w1", kind="memories", done=1, total=4)
    running = page(admin_client, row)
    assert '<progress id="import-progress" max="4" value="1"></progress>' in running
    assert "memories: 1 of 4 (step 2 of 8)" in running

    assert job_run(job, "w1") == "COMPLETED"
    row.refresh_from_db()
    expected = source_counts(FIXTURES / "agno3_full.db")
    # The handler reported each kind as it went: the last one, complete.
    assert jobs().get().progress == {"kind": "learnings", "done": expected["learnings"], "total": expected["learnings"]}
    assert row.status == "completed" and row.finished_at and not row.error
    assert {c["kind"]: c["imported"] for c in row.report["counts"]} == expected
    assert not stored.exists() and row.upload_path == ""  # the uploaded copy goes once imported
    done = page(admin_client, row)
    assert 'http-equiv="refresh"' not in done and 'id="import-progress"' not in done
    counts = re.search(r'<table id="import-report-counts">.*?</table>', done, re.S).group(0)
    assert f"<th scope=\"row\">sessions</th><td>{expected['sessions']}</td><td>0</td><td>0</td>" in counts
    assert f"<th scope=\"row\">knowledge</th><td>{expected['knowledge']}</td>" in counts
    assert f"<th scope=\"row\">learnings</th><td>{expected['learnings']}</td><td>0</td><td>0</td>" in counts
    assert Session.objects.for_user("carol").filter(pk="s-carol-agent").exists()
    listing = admin_client.get(reverse("admin:importer_agnoimport_changelist")).content.decode()
    assert f"{expected['sessions']} sessions" in listing


def test_the_report_lists_colliding_users_and_skipped_rows_with_their_reasons(admin_client, tmp_path) -> None:
    import sqlite3

    source = tmp_path / "agno.db"
    shutil.copy(FIXTURES / "agno3_full.db", source)
    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE agno_schedules SET name = '' WHERE id = 'sch-1'")
        conn.execute("UPDATE agno_memories SET user_id = 'erin'")
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    make_session("erin")  # a native erin here
    admin_client.post(ADD, {"database_url": f"sqlite:///{source}"})
    row = AgnoImport.objects.get()
    assert row.source_url == f"sqlite:///{source}"
    assert job_run(job_claim(worker="w1"), "w1") == "COMPLETED"
    row.refresh_from_db()
    assert row.report["colliding_users"] == ["erin"] and row.source_url == ""
    assert row.report["failures"] == [
        {"kind": "schedule", "id": "sch-1", "reason": "schedule has no name or no endpoint", "users": ["carol"]},
        {"kind": "schedule run", "id": "sch-1-run-1", "reason": "its schedule sch-1 is not here (not imported)", "users": ["carol"]},
    ]
    html = page(admin_client, row)
    assert '<ul id="import-report-collisions"><li><code>erin</code> already has rows here' in html
    assert "<td>schedule</td><td><code>sch-1</code></td><td>schedule has no name or no endpoint</td>" in html
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before  # the source is never changed

    # Merging the colliding user, as the operator decides to.
    admin_client.post(ADD, {"database_url": f"sqlite:///{source}", "merge_users_text": "erin"})
    again = AgnoImport.objects.exclude(pk=row.pk).get()
    assert again.merge_users == ["erin"]
    job_run(job_claim(worker="w1"), "w1")
    again.refresh_from_db()
    memories = next(c for c in again.report["counts"] if c["kind"] == "memories")
    assert memories["imported"] == 1 and not again.report["colliding_users"]


@pytest.mark.parametrize("form, reason", [
    ({"upload": SimpleUploadedFile("notes.txt", b"hello")}, "notes.txt is not a SQLite database file"),
    ({"database_url": "postgresql://nobody@127.0.0.1:1/nothing"}, "postgresql://127.0.0.1:1/nothing"),
    ({"database_url": "mysql://db/agno"}, "Unsupported database URL scheme"),
    ({}, "Give either an uploaded SQLite file or a database URL"),
])
def test_a_source_that_cannot_be_imported_is_refused_on_the_form_and_nothing_is_queued(admin_client, form, reason) -> None:
    response = admin_client.post(ADD, form)
    assert response.status_code == 200 and reason in response.content.decode()
    assert not AgnoImport.objects.exists() and not jobs().exists()
    assert not upload_dir().exists() or not any(upload_dir().iterdir())


def test_a_sqlite_file_that_is_not_agnos_is_refused(admin_client, tmp_path) -> None:
    import sqlite3

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE notes (id INTEGER)").connection.close()
    response = admin_client.post(ADD, {"upload": SimpleUploadedFile("other.db", other.read_bytes())})
    assert "not an Agno database?" in response.content.decode()
    assert not AgnoImport.objects.exists() and not any(upload_dir().iterdir())


def test_a_cancelled_job_leaves_its_import_failed_with_the_reason(admin_client) -> None:
    admin_client.post(ADD, {"upload": upload()})
    row = AgnoImport.objects.get()
    assert job_cancel(job_id=row.job_id)
    html = page(admin_client, row)
    row.refresh_from_db()
    assert row.status == "failed" and row.error == "The import's job was cancelled" and row.upload_path == ""
    assert "The import&#x27;s job was cancelled" in html and 'http-equiv="refresh"' not in html


def test_only_a_superuser_starts_an_import(client, django_user_model) -> None:
    staff = django_user_model.objects.create_user("staffer", password="pw-for-tests", is_staff=True)
    client.force_login(staff)
    assert client.get(ADD).status_code == 403
    assert client.post(ADD, {"upload": upload()}).status_code == 403
    client.logout()
    anonymous = client.post(ADD, {"upload": upload()})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert not AgnoImport.objects.exists() and not jobs().exists()
