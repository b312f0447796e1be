"""A conversation's branches: an edit replaces a message for the model, and the chat's ‹ › switch
whole branches (sessions.services.branches, the runs API and /chat/api/sessions/{id}/branch)."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions.models import Run, RunStatus
from sessions.selectors import run_history
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db(transaction=True)




def say(client: Client, message: str, session_id: str = "s-tea") -> dict[str, Any]:
    response = client.post("/agents/assistant/runs", {"message": message, "session_id": session_id, "stream": "false"})
    assert response.status_code == 200, response.content
    return response.json()


def edit(client: Client, run: dict[str, Any], message: str, session_id: str = "s-tea") -> dict[str, Any]:
    """What the chat's Edit sends: the run's transcript up to its own message, then the new text."""
    index = max(i for i, m in enumerate(run["messages"]) if m["role"] == "user")
    response = client.post(f"/agents/assistant/runs/{run['run_id']}/continue", {
        "session_id": session_id, "input": message, "continue_from": str(index), "fork": "true", "stream": "false",
    })
    assert response.status_code == 200, response.content
    return response.json()


def conversation_part(content: str) -> str:
    """What the offline model says of the conversation it sees (not what it remembers of the user)."""
    return content.split(" I remember")[0]


def switch(client: Client, run_id: str, session_id: str = "s-tea"):
    return client.post(f"/chat/api/sessions/{session_id}/branch", {"run_id": run_id}, content_type="application/json")


def listed(client: Client, session_id: str = "s-tea", **params: str) -> list[dict[str, Any]]:
    response = client.get(f"/sessions/{session_id}/runs", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_an_edited_message_replaces_the_old_one_for_the_model(alice) -> None:
    first = say(alice, "I like green tea")
    edited = edit(alice, first, "I like black coffee")
    # The reply sees the conversation before the edited message, not the version it replaces.
    assert edited["content"].startswith("(offline demo) You said: I like black coffee")
    assert "This is the first message I see from you." in edited["content"] and "green tea" not in conversation_part(edited["content"])
    # Later turns see one version: the edited one.
    later = say(alice, "What do I like?")
    assert 'I can see 1 earlier message from you; the previous one was: "I like black coffee"' in later["content"]
    assert "green tea" not in conversation_part(later["content"])

    # The stored runs say which branch is active.
    rows = {run.pk: run for run in Run.objects.for_user("alice").filter(session_id="s-tea")}
    assert (rows[first["run_id"]].branch_active, rows[edited["run_id"]].branch_active, rows[later["run_id"]].branch_active) == (False, True, True)
    assert rows[edited["run_id"]].previous_run_id is None and rows[later["run_id"]].previous_run_id == edited["run_id"]
    # The session's runs and its chat history follow the active branch; every version on request.
    assert [run["run_id"] for run in listed(alice)] == [edited["run_id"], later["run_id"]]
    every = listed(alice, branches="all")
    assert [(run["run_id"], run["branch_active"], run.get("previous_run_id")) for run in every] == [
        (first["run_id"], False, None), (edited["run_id"], True, None), (later["run_id"], True, edited["run_id"]),
    ]
    previews = alice.get("/sessions/s-tea/run-previews").json()
    assert [run["run_id"] for run in previews] == [edited["run_id"], later["run_id"]]
    assert len(alice.get("/sessions/s-tea/run-previews", {"branches": "all"}).json()) == 3
    history = alice.get("/sessions/s-tea").json()["chat_history"]
    assert [m["content"] for m in history if m["role"] == "user"] == ["I like black coffee", "What do I like?"]
    assert alice.get("/sessions/s-tea/runs", {"branches": "some"}).status_code == 422


def test_editing_a_message_in_the_middle_leaves_the_later_turns_out(alice) -> None:
    say(alice, "My name is Ada")
    second = say(alice, "I like green tea")
    say(alice, "Recommend a cafe")
    edited = edit(alice, second, "I like black coffee")
    # Only what came before the edited message: not the turn after it, not the old version.
    assert 'I can see 1 earlier message from you; the previous one was: "My name is Ada"' in edited["content"]
    assert [run["run_input"] for run in listed(alice)] == ["My name is Ada", "I like black coffee"]


def test_switching_versions_switches_the_whole_branch_and_the_models_history(alice) -> None:
    first = say(alice, "I like green tea")
    after_first = say(alice, "Pick a cup")
    edited = edit(alice, first, "I like black coffee")
    after_edit = say(alice, "Pick a mug")

    answer = switch(alice, first["run_id"])
    assert answer.status_code == 200, answer.content
    # The old version comes back with the turns that followed it.
    assert answer.json()["active_run_ids"] == [first["run_id"], after_first["run_id"]]
    assert [run["run_id"] for run in listed(alice)] == [first["run_id"], after_first["run_id"]]
    later = say(alice, "And now?")
    assert 'I can see 2 earlier messages from you; the previous one was: "Pick a cup"' in later["content"]
    assert "coffee" not in conversation_part(later["content"]) and "mug" not in conversation_part(later["content"])

    # And back: the edited version's branch, down to its newest turn.
    assert switch(alice, edited["run_id"]).json()["active_run_ids"] == [edited["run_id"], after_edit["run_id"]]
    assert [run["run_id"] for run in listed(alice)] == [edited["run_id"], after_edit["run_id"]]


def test_a_regeneration_takes_the_place_of_the_answer_it_replaces(alice) -> None:
    first = say(alice, "Tell me a joke")
    again = alice.post(f"/agents/assistant/runs/{first['run_id']}/continue", {"session_id": "s-tea", "regenerate": "true", "stream": "false"}).json()
    later = say(alice, "Another")
    assert "I can see 1 earlier message from you" in later["content"]
    rows = {run.pk: run for run in Run.objects.for_user("alice").filter(session_id="s-tea")}
    assert rows[first["run_id"]].status == RunStatus.REGENERATED and not rows[first["run_id"]].branch_active
    assert rows[later["run_id"]].previous_run_id == again["run_id"]


def test_only_the_owner_switches_a_conversations_branch(alice, bob) -> None:
    first = say(alice, "I like green tea")
    edited = edit(alice, first, "I like black coffee")
    say(bob, "my own", session_id="s-bob")
    # Another user's session, and another user's run named in one's own session: not found.
    refused = switch(bob, first["run_id"])
    assert refused.status_code == 404 and refused.json()["detail"] == "Run not found"
    assert switch(bob, first["run_id"], session_id="s-bob").status_code == 404
    assert Run.objects.for_user("alice").get(pk=edited["run_id"]).branch_active
    # Not a run of this session, and a run made inside another (a member's): not a version either.
    assert switch(alice, "no-such-run").status_code == 404
    assert Client().post("/chat/api/sessions/s-tea/branch", {"run_id": first["run_id"]}, content_type="application/json").status_code in (401, 403)


def test_a_run_on_another_branch_reads_its_own_branchs_history() -> None:
    session = make_session("alice")
    root = make_run("alice", session=session, status=RunStatus.COMPLETED, run_data={"n": "root"})
    old = make_run("alice", session=session, status=RunStatus.COMPLETED, run_data={"n": "old"})
    old.refresh_from_db()  # as the services read a run they redo
    new = make_run("alice", session=session, status=RunStatus.COMPLETED, run_data={"n": "new"}, redoes=old)
    tail = make_run("alice", session=session, status=RunStatus.COMPLETED, run_data={"n": "tail"})
    old.refresh_from_db()
    assert (old.branch_active, new.previous_run_id) == (False, root.pk)
    assert run_history(user="alice", session_id=session.pk, limit=5) == [{"n": "root"}, {"n": "new"}, {"n": "tail"}]
    # The replaced version, continued (a paused run decided later, say), sees its own branch.
    assert run_history(user="alice", session_id=session.pk, limit=5, before=old) == [{"n": "root"}]
    assert run_history(user="bob", session_id=session.pk, limit=5, before=old) == []
    tail.refresh_from_db()
    assert tail.previous_run_id == new.pk
