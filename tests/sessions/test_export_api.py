"""Exporting a conversation: GET /sessions/{session_id}/export/{markdown|json}, for its owner."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from core.auth import OPERATOR
from core.services.tokens import access_token_create
from sessions.models import Run, RunStatus
from sessions.services.branches import branch_activate
from sessions.transcript import conversation_transcript
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db(transaction=True)




def run(client: Client, message: str, session_id: str = "s-tea") -> dict[str, Any]:
    response = client.post("/agents/assistant/runs", {"message": message, "stream": "false", "session_id": session_id})
    assert response.status_code == 200, response.content
    return response.json()


def test_a_conversation_exports_as_markdown_and_json_with_its_tool_calls(alice) -> None:
    first = run(alice, "I like green tea")
    second = run(alice, '/call add {"a": 2, "b": 40}')
    alice.post("/sessions/s-tea/rename", {"session_name": "Tea & sums"}, content_type="application/json")

    markdown = alice.get("/sessions/s-tea/export/markdown")
    assert markdown.status_code == 200
    assert markdown["Content-Type"] == "text/markdown; charset=utf-8"
    assert markdown["Content-Disposition"] == 'attachment; filename="tea-sums.md"'
    text = markdown.content.decode()
    assert text.startswith("# Tea & sums\n")
    assert "**You** · " in text and "I like green tea" in text and first["content"] in text
    assert "Tool call `add`:" in text and '```json\n{\n  "a": 2,\n  "b": 40\n}\n```' in text
    assert 'Result:\n\n```\n{"operation": "addition", "result": 42.0}\n```' in text
    assert text.index("I like green tea") < text.index(first["content"]) < text.index("Tool call `add`") < text.index(second["content"])

    exported = alice.get("/sessions/s-tea/export/json")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/json"
    assert exported["Content-Disposition"] == 'attachment; filename="tea-sums.json"'
    body = json.loads(exported.content)
    assert body["format"] == "agno-site.conversation.v1"
    assert body["session"]["session_id"] == "s-tea" and body["session"]["session_name"] == "Tea & sums"
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("user", "I like green tea"), ("assistant", first["content"]),
        ("user", '/call add {"a": 2, "b": 40}'), ("assistant", second["content"]),
    ]
    assert body["messages"][1]["name"] == "Assistant" and body["messages"][1]["run_id"] == first["run_id"]
    assert body["messages"][3]["tools"] == [{"name": "add", "args": {"a": 2, "b": 40}, "result": '{"operation": "addition", "result": 42.0}', "state": "done"}]


def test_a_tool_call_refused_before_it_ran_is_exported_as_failed_in_its_place(alice) -> None:
    """A call of a tool the agent does not have never runs, so (as in Agno) it is not among the
    run's tools; its refusal is kept in the run's messages, and the transcript shows it where it
    was made, failed, as the stream did (ToolCallError)."""
    reply = run(alice, '/call add {"a": 1, "b": 1}\n/call erase_disk {"really": true}\n/call add {"a": 2, "b": 2}')
    stored = Run.objects.for_user("alice").get(pk=reply["run_id"])
    assert [tool["tool_name"] for tool in stored.run_data["tools"]] == ["add", "add"]  # the refused one is not a run tool
    body = json.loads(alice.get("/sessions/s-tea/export/json").content)
    tools = body["messages"][1]["tools"]
    assert [(tool["name"], tool["state"]) for tool in tools] == [("add", "done"), ("erase_disk", "failed"), ("add", "done")]
    assert tools[1]["args"] == {"really": True} and "does not exist or is not available" in tools[1]["result"]
    text = alice.get("/sessions/s-tea/export/markdown").content.decode()
    assert "Tool call `erase_disk` (failed):" in text and "Tool call `add`:" in text


def test_another_users_session_and_a_missing_one_are_the_same_404(alice, bob, settings) -> None:
    run(alice, "hello")
    settings.ANONYMOUS_ACCESS = "guests"  # the development default: anonymous callers are not everyone
    for export_format in ("markdown", "json"):
        theirs = bob.get(f"/sessions/s-tea/export/{export_format}")
        missing = bob.get(f"/sessions/nope/export/{export_format}")
        assert (theirs.status_code, theirs.json()) == (404, {"detail": "Session with id 's-tea' not found"})
        assert (missing.status_code, missing.json()) == (404, {"detail": "Session with id 'nope' not found"})
        # Nor does a caller without credentials read it (a guest sees only ownerless sessions).
        assert Client().get(f"/sessions/s-tea/export/{export_format}").status_code == 404
    assert alice.get("/sessions/s-tea/export/pdf").status_code == 404


def test_an_access_token_exports_its_owners_conversation_with_sessions_read(alice) -> None:
    run(alice, "hello")
    _, reader = access_token_create(name="reader", user_id="alice", scopes="sessions:read", granted_by=OPERATOR)
    _, runner = access_token_create(name="runner", user_id="alice", scopes="agents:run", granted_by=OPERATOR)
    api = Client()
    assert api.get("/sessions/s-tea/export/json", HTTP_AUTHORIZATION=f"Bearer {reader}").status_code == 200
    refused = api.get("/sessions/s-tea/export/json", HTTP_AUTHORIZATION=f"Bearer {runner}")
    assert refused.status_code == 403 and refused.json()["detail"] == "Insufficient permissions. Required scope(s): sessions:read"


def test_the_export_follows_the_branch_the_chat_shows() -> None:
    session = make_session("alice", session_id="s-branches")

    def reply(run_id: str, asked: str, answer: str, status: str = RunStatus.COMPLETED, **run_data: Any) -> None:
        made = make_run("alice", session=session, run_id=run_id, status=status, input={"input_content": asked},
                        run_data={"messages": [{"role": "user", "content": asked}, {"role": "assistant", "content": answer}], **run_data})
        Run.objects.for_user("alice").filter(pk=made.pk).update(content=answer)

    reply("r1", "I like green tea", "Noted: green tea.")
    reply("r2", "What do I like?", "Green tea.", status=RunStatus.REGENERATED)
    reply("r3", "What do I like?", "You like green tea.", forked_from_run_id="r2", regenerated_from="r2")  # as a regenerate stores it
    # An edit of the first message: a fork of r1 whose transcript holds the new text.
    reply("r4", "I like green tea", "Noted: black coffee.", forked_from_run_id="r1",
          messages=[{"role": "user", "content": "I like black coffee"}, {"role": "assistant", "content": "Noted: black coffee."}])
    reply("r5", "And now?", "Black coffee.")
    reply("r6", "Still there?", "", status=RunStatus.PENDING)  # not part of the conversation yet
    # The tree as the branch service stores it: r3 redoes r2, r4 redoes r1; r4's branch is active.
    for run_id, previous in {"r1": None, "r2": "r1", "r3": "r1", "r4": None, "r5": "r4", "r6": "r5"}.items():
        Run.objects.for_user("alice").filter(pk=run_id).update(previous_run_id=previous)
    branch_activate(owner_id="alice", session_id="s-branches", run_id="r5")

    transcript = conversation_transcript(user="alice", session_id="s-branches")
    assert [(m["role"], m["content"]) for m in transcript.messages] == [
        ("user", "I like black coffee"), ("assistant", "Noted: black coffee."),
        ("user", "And now?"), ("assistant", "Black coffee."),
    ]
    assert conversation_transcript(user="bob", session_id="s-branches") is None
    # The chat's arrows back to the first version: the export follows the branch on screen.
    branch_activate(owner_id="alice", session_id="s-branches", run_id="r3")
    transcript = conversation_transcript(user="alice", session_id="s-branches")
    assert [(m["role"], m["content"]) for m in transcript.messages] == [
        ("user", "I like green tea"), ("assistant", "Noted: green tea."),
        ("user", "What do I like?"), ("assistant", "You like green tea."),
    ]


def test_a_tool_result_holding_a_code_fence_cannot_break_out_of_its_block() -> None:
    from sessions.transcript import transcript_markdown

    session = make_session("alice", session_id="s-fence", session_name="Fences")
    result = "```\nnot the end of the block\n```"
    made = make_run("alice", session=session, status=RunStatus.COMPLETED, input={"input_content": "show me"},
                    run_data={"tools": [{"tool_name": "read_file", "tool_args": {"path": "a.md"}, "result": result}]})
    Run.objects.for_user("alice").filter(pk=made.pk).update(content="Here it is.")
    text = transcript_markdown(conversation_transcript(user="alice", session_id="s-fence"), site_name="Agno Site")
    assert f"Result:\n\n````\n{result}\n````\n" in text


def test_the_export_of_a_real_conversation_follows_a_regenerated_answer_and_an_edit(alice) -> None:
    first = run(alice, "I like green tea")
    regenerated = alice.post(f"/agents/assistant/runs/{first['run_id']}/continue", {"session_id": "s-tea", "regenerate": "true", "stream": "false"})
    assert regenerated.status_code == 200, regenerated.content
    second = run(alice, "What do I like?")
    messages = alice.get(f"/sessions/s-tea/runs/{second['run_id']}").json()["messages"]
    asked_at = max(index for index, message in enumerate(messages) if message["role"] == "user" and not message.get("from_history"))
    # The chat's Edit: the second message answered again with new text, in a new run beside it.
    edited = alice.post(f"/agents/assistant/runs/{second['run_id']}/continue",
                        {"session_id": "s-tea", "fork": "true", "continue_from": str(asked_at), "input": "What do I drink?", "stream": "false"})
    assert edited.status_code == 200, edited.content

    body = json.loads(alice.get("/sessions/s-tea/export/json").content)
    assert [(m["role"], m["run_id"]) for m in body["messages"]] == [
        ("user", regenerated.json()["run_id"]), ("assistant", regenerated.json()["run_id"]),
        ("user", edited.json()["run_id"]), ("assistant", edited.json()["run_id"]),
    ]
    assert [m["content"] for m in body["messages"] if m["role"] == "user"] == ["I like green tea", "What do I drink?"]
