"""Erasing a user's data (core.services.userdata, the console's erase page) leaves nothing the
importer kept about them: their provenance rows (ImportedRecord, an owned table) are deleted with
the rest, and the imports an operator ran (AgnoImport) no longer name them: not as a merged user,
the operator who started it, a colliding user, nor in a skipped row (its owner's, or naming the
holder of its id). The counts stay; other users' details stay."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from jobs.services.claims import job_claim
from jobs.services.jobs import job_run
from core.services.userdata import userdata_counts, userdata_erase, userdata_export
from importer.erasure import ERASED_FAILURE
from importer.models import AgnoImport, ImportedRecord
from tests.factories import make_memory, make_session

FIXTURES = Path(__file__).parent / "fixtures"
ADD = reverse("admin:importer_agnoimport_add")
ERASE = reverse("console-userdata-erase")
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def worker_is_the_test(settings, tmp_path):
    settings.EMBEDDED_WORKER = False
    settings.VAR_DIR = tmp_path / "var"


def imports_text() -> str:
    """Every stored field of every import, as one text to search for a name (the source's path is
    the test's temporary directory, named after the test: test names here name nobody)."""
    return json.dumps([model_to_dict(row) for row in AgnoImport.objects.order_by("created_at")], default=str)


def run_import(admin_client, form: dict) -> AgnoImport:
    before = set(AgnoImport.objects.values_list("pk", flat=True))
    assert admin_client.post(ADD, form).status_code == 302
    assert job_run(job_claim(worker="w1"), "w1") == "COMPLETED"
    return AgnoImport.objects.exclude(pk__in=before).get()


@pytest.fixture
def imported(admin_client, tmp_path):
    """Two imports of agno3_full.db (carol's and dave's rows): the first reports carol as colliding
    (a native carol here), the second merges her. Carol's schedule is malformed (a skipped row of
    hers), and dave's memory id is held here by erin (a skipped row naming erin)."""
    source = tmp_path / "agno.db"
    shutil.copy(FIXTURES / "agno3_full.db", source)
    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE agno_schedules SET name = '' WHERE id = 'sch-1'")
        dave_memory = conn.execute("SELECT memory_id FROM agno_memories WHERE user_id = 'dave'").fetchone()[0]
    make_session("carol")  # a native carol
    make_memory("erin", memory_id=dave_memory)
    first = run_import(admin_client, {"database_url": f"sqlite:///{source}"})
    second = run_import(admin_client, {"database_url": f"sqlite:///{source}", "merge_users_text": "carol"})
    return first, second


def test_the_imports_named_carol_and_erin_before_the_erasure(imported) -> None:
    first, second = imported
    assert first.report["colliding_users"] == ["carol"] and second.merge_users == ["carol"]
    assert {"kind": "schedule", "id": "sch-1", "reason": "schedule has no name or no endpoint", "users": ["carol"]} in second.report["failures"]
    memory = next(f for f in first.report["failures"] if f["kind"] == "memory")
    assert memory["users"] == ["dave", "erin"] and "('erin')" in memory["reason"]
    assert ImportedRecord.objects.for_user("carol").filter(kind="session").count() == 2
    # carol's provenance is hers: counted on the erase page, carried by her export.
    assert userdata_counts(user_id="carol")["importer.ImportedRecord"] == ImportedRecord.objects.for_user("carol").count() > 2
    exported = userdata_export(user_id="carol")["tables"]["importer.ImportedRecord"]
    assert "s-carol-agent" in {row["source_id"] for row in exported} and {row["user_id"] for row in exported} == {"carol"}


def test_erasing_a_user_on_the_console_leaves_no_import_record_naming_her(admin_client, imported) -> None:
    first, second = imported
    dave_records = ImportedRecord.objects.for_user("dave").count()
    counts_before = [row.report["counts"] for row in (first, second)]
    page = admin_client.get(ERASE + "?user_id=carol").content.decode()
    assert "importer.ImportedRecord:" in page

    response = admin_client.post(ERASE + "?user_id=carol", {"user_id": "carol", "confirm": "carol"}, follow=True)
    assert "other rows that named them no longer do" in response.content.decode()
    assert not ImportedRecord.all_users.filter(user_id="carol").exists()
    assert ImportedRecord.objects.for_user("dave").count() == dave_records  # nobody else's
    assert "carol" not in imports_text()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.report["colliding_users"] == [] and second.merge_users == []
    assert {"kind": "schedule", "id": "", "reason": ERASED_FAILURE, "users": []} in second.report["failures"]
    assert [row.report["counts"] for row in (first, second)] == counts_before  # counts name nobody
    # dave's skipped memory names erin, not carol: it keeps its details.
    assert any(f["users"] == ["dave", "erin"] for f in first.report["failures"])
    assert first.started_by == "admin" and first.source_label.endswith("/agno.db")


def test_erasing_the_holder_of_an_id_anonymises_the_skipped_row_that_named_her(imported) -> None:
    erasure = userdata_erase(user_id="erin")
    assert erasure.deleted == {"agno_sessions.UserMemory": 1}
    assert erasure.anonymised == {"importer.AgnoImport": 2}  # both imports skipped dave's memory
    assert "erin" not in imports_text()
    for row in imported:
        row.refresh_from_db()
        memory = next(f for f in row.report["failures"] if f["kind"] == "memory")
        assert memory == {"kind": "memory", "id": "", "reason": ERASED_FAILURE, "users": []}


def test_erasing_the_operator_who_started_an_import_blanks_started_by(imported) -> None:
    assert set(AgnoImport.objects.values_list("started_by", flat=True)) == {"admin"}
    assert userdata_erase(user_id="admin").anonymised == {"importer.AgnoImport": 2}
    assert set(AgnoImport.objects.values_list("started_by", flat=True)) == {""}


def test_a_report_written_before_failures_named_their_users_loses_the_rows_that_name_her() -> None:
    """Reports kept from before (no ``users`` in a failure) are searched for the user id as a word."""
    AgnoImport.objects.create(id="old", source_label="upload carol.db", error="", report={
        "source": "upload carol.db", "layout": "3.x", "counts": [], "colliding_users": ["carol", "caroline"],
        "failures": [
            {"kind": "metrics row", "id": "2024-01-02/daily/carol", "reason": "date is not a date"},
            {"kind": "session", "id": "s-1", "reason": "session id is taken here by another user ('carol')"},
            {"kind": "session", "id": "s-2", "reason": "session id is taken here by another user ('caroline')"},
        ],
    })
    assert userdata_erase(user_id="carol").anonymised == {"importer.AgnoImport": 1}
    row = AgnoImport.objects.get()
    assert row.source_label == "upload (erased user).db" and row.report["source"] == "upload (erased user).db"
    assert row.report["colliding_users"] == ["caroline"]
    assert [f["id"] for f in row.report["failures"]] == ["", "", "s-2"]
    assert "carol'" not in imports_text() and "/carol" not in imports_text()


def test_an_erasure_that_names_no_import_changes_none() -> None:
    AgnoImport.objects.create(id="other", source_label="upload agno.db", started_by="admin", merge_users=["dave"])
    assert userdata_erase(user_id="carol").anonymised == {}
    assert AgnoImport.objects.get().merge_users == ["dave"]
