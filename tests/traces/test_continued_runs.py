"""The runs the chat links to a trace are traced: a regenerated answer and an edited message's new
version (they begin with RunContinued), and an eval's runs (not streamed: their end is their
first event); and a team's failed tool calls are error spans, a call refused before it ran too."""
from __future__ import annotations

import pytest

from tests.agents.conftest import worker  # noqa: F401 (a fixture: evals run as jobs)
from traces.models import Trace
from traces.provider import flush

from .test_tracing import _run, _shape, _tree

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_regenerated_answer_has_its_own_trace(client):
    first = _run(client, "/agents/assistant/runs", message="tell me", session_id="s-t")
    again = _run(client, f"/agents/assistant/runs/{first['run_id']}/continue", session_id="s-t", regenerate="true")
    trace, children, _ = _tree(again["run_id"])
    [(kind, name, inner)] = _shape(children)
    assert (kind, name, trace.status) == ("AGENT", "Agent.run", "OK")
    assert "LLM" in [item[0] for item in inner]


def test_an_edited_messages_new_version_has_its_own_trace(client):
    first = _run(client, "/agents/assistant/runs", message="I like green tea", session_id="s-t")
    edited = _run(client, f"/agents/assistant/runs/{first['run_id']}/continue", session_id="s-t", fork="true",
                  continue_from="1", input="I like black coffee")
    trace, children, _ = _tree(edited["run_id"])
    [(kind, _, _)] = _shape(children)
    assert kind == "AGENT" and trace.input == "I like black coffee"


def test_an_evals_runs_are_traced(client, worker):
    import json

    from sessions.models import Run

    response = client.post("/eval-runs", data=json.dumps({"eval_type": "reliability", "input": '/call add {"a": 2, "b": 3}',
                                                          "agent_id": "assistant", "expected_tool_calls": ["add"]}), content_type="application/json")
    assert response.status_code == 200, response.content
    runs = list(Run.all_users.filter(session__session_id__startswith="eval_", parent_run_id__isnull=True))
    assert runs
    assert flush()
    for run in runs:
        assert Trace.all_users.filter(run_id=run.pk).exists(), run.pk


def _member_task(task: str) -> str:
    import json

    return "/call delegate_task_to_member " + json.dumps({"member_id": "writer", "task": task})


def test_a_team_members_failed_tool_calls_are_error_spans_with_the_tools_error(client):
    body = _run(client, "/teams/research-team/runs", message=_member_task('/call add {"a": "x", "b": 1}'))
    _, _, spans = _tree(body["run_id"])
    (tool,) = [span for span in spans.values() if span.name == "add"]
    assert (tool.span_type, tool.status) == ("TOOL", "ERROR")
    assert tool.status_message.startswith("can only concatenate str")  # not "add(a=x, b=1) completed in …"


def test_a_call_to_a_tool_that_does_not_exist_is_an_error_span(client):
    body = _run(client, "/teams/research-team/runs", message=_member_task("/call nosuch {}"))
    trace, children, spans = _tree(body["run_id"])
    (tool,) = [span for span in spans.values() if span.name == "nosuch"]
    assert (tool.span_type, tool.status) == ("TOOL", "ERROR") and "does not exist" in tool.status_message
    member = spans[tool.parent_span_id]
    assert member.span_type == "AGENT" and member.attributes["agno.agent.id"] == "writer"
    assert trace.error_count >= 1
