"""The v3 re-key of pre-v3 ``namespace="user"`` entity rows (manage.py rekey_learnings)."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from engine.learning import user_key_segment
from learnings.models import Learning
from tests.factories import make_learning
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db


def legacy(user_id: str | None, entity_id: str, content: dict, **fields) -> Learning:
    """An entity row as a pre-v3 Agno wrote it: the key has no user in it."""
    return make_learning(
        user_id, learning_id=f"entity_user_company_{entity_id}", learning_type="entity_memory", namespace="user",
        entity_id=entity_id, entity_type="company", content=content, **fields,
    )


def scoped(user_id: str, entity_id: str) -> str:
    return f"entity_user_{user_key_segment(user_id)}_company_{entity_id}"


@pytest.fixture
def imported() -> None:
    legacy("alice", "acme", {"user_id": "alice", "facts": [{"content": "Acme makes anvils"}]})
    legacy("alice", "globex", {"user_id": "alice", "facts": [{"content": "old fact"}, {"content": "Shared fact"}]})
    # The upgraded application already wrote alice's globex under her new key: a merge.
    make_learning("alice", learning_id=scoped("alice", "globex"), learning_type="entity_memory", namespace="user",
                  entity_id="globex", entity_type="company", content={"user_id": "alice", "facts": [{"content": "shared  FACT"}, {"content": "new fact"}]})
    # bob wrote over the row alice owns: two users' data in one row.
    legacy("alice", "initech", {"user_id": "bob", "facts": [{"content": "bob's secret"}]})
    legacy(None, "umbrella", {"facts": []})
    legacy("carol", "hooli", "not an object")
    make_learning("dave", learning_id=scoped("dave", "acme"), learning_type="entity_memory", namespace="user",
                  entity_id="acme", entity_type="company", content={"user_id": "dave"})


def run(*args: str) -> dict:
    out = StringIO()
    call_command("rekey_learnings", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_a_dry_run_reports_every_bucket_and_writes_nothing(imported) -> None:
    before = sorted(Learning.all_users.values_list("learning_id", "namespace", "content"), key=str)
    report = run()
    assert report == {
        "scanned": 7, "keyed": 2, "dry_run": True,
        "rekeyed": ["entity_user_company_acme"], "merged": ["entity_user_company_globex"],
        "quarantined": ["entity_user_company_initech"], "contaminated": ["entity_user_company_initech"],
        "contaminated_keyed": [], "unowned": ["entity_user_company_umbrella"], "malformed": ["entity_user_company_hooli"],
        "conflicts": [], "failed": [], "purged": [],
    }
    assert sorted(Learning.all_users.values_list("learning_id", "namespace", "content"), key=str) == before


def test_apply_rekeys_merges_with_the_newer_row_winning_and_quarantines_shared_rows(imported) -> None:
    report = run("--apply")
    assert (report["rekeyed"], report["merged"], report["quarantined"]) == (
        ["entity_user_company_acme"], ["entity_user_company_globex"], ["entity_user_company_initech"],
    )
    acme = Learning.all_users.get(pk=scoped("alice", "acme"))
    assert (acme.user_id, acme.namespace, acme.content) == ("alice", "user", {"user_id": "alice", "facts": [{"content": "Acme makes anvils"}]})
    globex = Learning.all_users.get(pk=scoped("alice", "globex"))
    assert globex.content["facts"] == [{"content": "old fact"}, {"content": "shared  FACT"}, {"content": "new fact"}]
    quarantined = Learning.all_users.get(pk="entity_quarantined_user_company_initech")
    assert (quarantined.user_id, quarantined.namespace) == ("alice", "quarantined_user")
    assert not Learning.all_users.filter(pk__in=["entity_user_company_acme", "entity_user_company_globex", "entity_user_company_initech"]).exists()
    # Left for an operator: the ownerless and the malformed rows.
    assert Learning.all_users.filter(pk__in=["entity_user_company_umbrella", "entity_user_company_hooli"]).count() == 2
    again = run("--apply")
    assert (again["keyed"], again["rekeyed"], again["merged"], again["quarantined"]) == (3, [], [], [])


def test_purge_unrecoverable_deletes_shared_and_ownerless_rows_instead(imported) -> None:
    report = run("--apply", "--purge-unrecoverable")
    assert report["purged"] == ["entity_user_company_initech", "entity_user_company_umbrella"]
    assert report["quarantined"] == []
    assert not Learning.all_users.filter(namespace="quarantined_user").exists()
    assert not Learning.all_users.filter(pk__in=report["purged"]).exists()


def test_a_quarantined_row_is_listed_and_mutable_for_its_owner_and_hidden_from_others(imported, client: Client, jwt_server) -> None:
    run("--apply")
    alice, bob = auth(token("alice", ["learnings:read", "learnings:write"])), auth(token("bob", ["learnings:read", "learnings:write"]))
    listed = client.get("/learnings", {"namespace": "quarantined_user"}, **alice).json()
    assert [row["learning_id"] for row in listed["data"]] == ["entity_quarantined_user_company_initech"]
    changed = client.patch("/learnings/entity_quarantined_user_company_initech", {"content": {"facts": []}}, content_type="application/json", **alice)
    assert changed.status_code == 200 and changed.json()["content"] == {"facts": []}
    assert client.get("/learnings", {"namespace": "quarantined_user"}, **bob).json()["data"] == []
    assert client.get("/learnings/entity_quarantined_user_company_initech", **bob).status_code == 404


def test_the_text_report_says_it_was_a_dry_run(imported) -> None:
    out = StringIO()
    call_command("rekey_learnings", stdout=out)
    text = out.getvalue()
    assert text.startswith("rekey_learnings: dry run (nothing written; pass --apply): scanned=7 keyed=2")
    assert "  quarantined: 1: entity_user_company_initech" in text


def test_imported_pre_v3_rows_come_in_verbatim_once_and_are_then_rekeyed() -> None:
    from learnings.services import LearningIdTaken, learning_import

    row = {
        "learning_id": "entity_user_company_acme", "learning_type": "entity_memory", "namespace": "user", "user_id": "alice",
        "entity_id": "acme", "entity_type": "company", "content": {"user_id": "alice", "facts": ["anvils"]},
        "metadata": None, "created_at": 1700000000, "updated_at": 1700000100,
    }
    assert learning_import(row=row) is True
    assert learning_import(row=row) is False  # a second import adds nothing
    with pytest.raises(LearningIdTaken):
        learning_import(row={**row, "user_id": "bob"})
    imported = Learning.all_users.get(pk="entity_user_company_acme")
    assert (imported.user_id, int(imported.created_at.timestamp()), int(imported.updated_at.timestamp())) == ("alice", 1700000000, 1700000100)
    assert run("--apply")["rekeyed"] == ["entity_user_company_acme"]
    assert Learning.all_users.get(pk=scoped("alice", "acme")).content == {"user_id": "alice", "facts": ["anvils"]}
