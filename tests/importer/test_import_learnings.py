"""agno_learnings rows of an Agno 3.x database (written by agno 3.1.10's own learning stores:
tests/importer/make_fixtures.py ``add_learnings``) come in under their ids and owners, once; a
pre-v3 entity under namespace "user" comes in on its owner's user-scoped key (issue 36 part 2)."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from engine.learning import user_key_segment
from importer.services import agno_import
from learnings.models import Learning
from learnings.services import learning_create
from tests.factories import make_session
from tests.importer.counting import source_counts

FIXTURES = Path(__file__).parent / "fixtures"
CAROL_ACME = f"entity_user_{user_key_segment('carol')}_company_acme"
DAVE_INITECH = f"entity_user_{user_key_segment('dave')}_company_initech"
pytestmark = pytest.mark.django_db


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "agno3_full.db"
    shutil.copy(FIXTURES / "agno3_full.db", path)
    return path


def rows() -> dict[str, tuple]:
    return {
        row.learning_id: (row.learning_type, row.user_id, row.namespace, row.agent_id, row.entity_id, row.entity_type)
        for row in Learning.all_users.all()
    }


def test_learnings_come_in_under_their_ids_and_owners_once(source: Path) -> None:
    assert CAROL_ACME == "entity_user_4c26d9074c27d89e_company_acme"  # the digest agno 3.1.10 wrote is ours
    report = agno_import(str(source))
    assert not report.failures, report.lines()
    assert report.imported["learnings"] == source_counts(source)["learnings"] == 6
    assert rows() == {
        "memories_carol": ("user_memory", "carol", None, "adder", None, None),
        "user_profile_carol": ("user_profile", "carol", None, "adder", None, None),
        CAROL_ACME: ("entity_memory", "carol", "user", "adder", "acme", "company"),
        "entity_global_company_acme": ("entity_memory", None, "global", "adder", "acme", "company"),
        "dec_fixture1": ("decision_log", "carol", None, "adder", None, None),
        # The pre-v3 row (shared key) is on dave's user-scoped key now.
        DAVE_INITECH: ("entity_memory", "dave", "user", None, "initech", "company"),
    }
    assert [fact["content"] for fact in Learning.all_users.get(pk=DAVE_INITECH).content["facts"]] == ["makes TPS reports"]
    assert Learning.all_users.get(pk="dec_fixture1").content["decision"] == "Used the add tool"
    again = agno_import(str(source))
    assert (again.imported["learnings"], again.skipped["learnings"], again.failures) == (0, 6, [])
    assert len(rows()) == 6


@pytest.mark.django_db(transaction=True)
def test_an_imported_users_learnings_are_theirs_in_the_api_and_the_agents_context(source: Path, client: Client, settings) -> None:
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.learnings.learning_agents"]
    agno_import(str(source))
    listed = client.get("/learnings", {"user_id": "carol", "learning_type": "entity_memory", "namespace": "user"}).json()["data"]
    assert [(row["learning_id"], row["user_id"]) for row in listed] == [(CAROL_ACME, "carol")]
    assert client.get("/learnings", {"user_id": "dave", "learning_type": "decision_log"}).json()["data"] == []
    response = client.post("/agents/learner-full/runs", {"message": "What do you know about me?", "stream": "false", "user_id": "carol"})
    content = response.json()["content"]
    assert "I remember 1 thing about you: Carol likes sums." in content and "I know about 1 entity: Acme (company)." in content
    other = client.post("/agents/learner-full/runs", {"message": "What do you know about me?", "stream": "false", "user_id": "dave"}).json()["content"]
    assert "Carol" not in other and "Acme" not in other and "I know about 1 entity: Initech (company)." in other


def test_a_pre_v3_entity_folds_into_the_row_its_owner_has_here(source: Path) -> None:
    learning_create(owner_id="dave", fields={
        "learning_type": "entity_memory", "namespace": "user", "entity_id": "initech", "entity_type": "company",
        "content": {"entity_id": "initech", "entity_type": "company", "name": "Initech Corp", "facts": [{"id": "n1", "content": "is in Texas"}]},
    })
    report = agno_import(str(source))
    assert not report.failures and report.imported["learnings"] == 6
    merged = Learning.objects.for_user("dave").get(pk=DAVE_INITECH).content
    assert merged["name"] == "Initech Corp"  # the row here wins a conflict
    assert [fact["content"] for fact in merged["facts"]] == ["makes TPS reports", "is in Texas"]
    assert agno_import(str(source)).imported["learnings"] == 0


def test_malformed_or_unkeyable_learnings_are_reported_by_id_and_skipped(source: Path) -> None:
    legacy = {"entity_id": "hooli", "entity_type": "company", "user_id": "erin", "facts": []}
    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE agno_learnings SET content = '{broken' WHERE learning_id = 'dec_fixture1'")
        insert = ("INSERT INTO agno_learnings (learning_id, learning_type, namespace, user_id, entity_id, entity_type, content, created_at) "
                  "VALUES (?, 'entity_memory', 'user', ?, ?, 'company', ?, 1)")
        conn.execute(insert, ("entity_user_company_umbrella", None, "umbrella", json.dumps({"facts": []})))
        conn.execute(insert, ("entity_user_company_hooli", "frank", "hooli", json.dumps(legacy)))
        conn.execute(insert, ("user_profile_gina", "gina", None, json.dumps({"name": "x"})))
    learning_create(owner_id="hank", fields={"learning_type": "user_profile", "user_id": "hank", "content": {}})
    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE agno_learnings SET learning_id = 'user_profile_hank', learning_type = 'user_profile' WHERE learning_id = 'user_profile_gina'")
    report = agno_import(str(source))
    reasons = {source_id: reason for kind, source_id, reason, _ in report.failures if kind == "learnings"}
    assert sorted(reasons) == ["dec_fixture1", "entity_user_company_hooli", "entity_user_company_umbrella", "user_profile_hank"]
    assert "content is not JSON" in reasons["dec_fixture1"]
    assert "has no owner" in reasons["entity_user_company_umbrella"]
    assert "held two users' data" in reasons["entity_user_company_hooli"]
    assert "held here by another owner" in reasons["user_profile_hank"]
    assert (report.imported["learnings"], report.failed["learnings"]) == (5, 4)
    assert not Learning.all_users.filter(learning_id__in=["dec_fixture1", "entity_user_company_umbrella"]).exists()
    assert not Learning.all_users.filter(entity_id="hooli").exists()
    assert Learning.all_users.get(pk="user_profile_hank").user_id == "hank"  # not overwritten


def test_a_colliding_users_learnings_stay_out_until_merged(source: Path) -> None:
    make_session("carol")
    report = agno_import(str(source))
    assert report.colliding_users == ["carol"] and report.skipped["learnings"] == 4 and report.imported["learnings"] == 2
    assert not Learning.all_users.filter(user_id="carol").exists()
    assert agno_import(str(source), merge_users=["carol"]).imported["learnings"] == 4


def test_the_command_reports_the_learnings(source: Path, capsys) -> None:
    call_command("import_agno", str(source))
    out = capsys.readouterr().out
    assert any(line.split() == ["learnings", "6", "0", "0"] for line in out.splitlines()), out
