"""/mcp's run lifecycle tools, as AgentOS's ``mcp_server=True`` serves them: ``continue_run`` (a
PAUSED run, with the human's decisions) and ``cancel_run``, and the session tools' filters and
full-run read. Driven by the MCP SDK's own client against a live server; every call goes through
the pipeline as the authenticated principal: a reader who may not run is refused as the API
refuses it, and another user's run or session ids are missing and change nothing."""
from __future__ import annotations

import json
import threading

import pytest

from jobs.models import CancelIntent
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.api.test_mcp_server import READ_ONLY, body, call, runs_of
from tests.fakes._base import Reply
from tests.security.conftest import jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

DELETE = '/call delete_file {"path": "q.txt"}'


def text_of(result) -> str:
    assert not result.is_error, result.content
    return result.content[0].text


def error_of(result) -> str:
    assert result.is_error, result.content
    return result.content[0].text


def test_a_paused_run_is_continued_over_mcp(live_api, jwt_server):
    alice = token("alice")
    paused = body(call(live_api, alice, "run_agent", {"agent_id": "hitl-agent", "message": DELETE}))
    (requirement,) = paused["requirements"]
    resolved = [{**requirement, "confirmation": True}]
    target = {"agent_id": "hitl-agent", "run_id": paused["run_id"], "session_id": paused["session_id"]}

    as_reader = call(live_api, token("alice", READ_ONLY), "continue_run", {**target, "requirements": resolved})
    as_bob = call(live_api, token("bob"), "continue_run", {**target, "requirements": resolved})
    no_target = call(live_api, alice, "continue_run", {"run_id": paused["run_id"], "session_id": paused["session_id"]})
    still = Run.objects.for_user("alice").get(pk=paused["run_id"]).status
    done = body(call(live_api, alice, "continue_run", {**target, "requirements": resolved}))
    again = call(live_api, alice, "continue_run", {**target, "requirements": resolved})

    assert (paused["status"], paused["tools"][0]["tool_name"], requirement["tool_execution"]["requires_confirmation"]) == ("PAUSED", "delete_file", True)
    assert error_of(as_reader) == "Error executing tool continue_run: Insufficient permissions. Required scope(s): agents:run"
    assert error_of(as_bob) == "Error executing tool continue_run: Run not found"  # as for an id that does not exist
    assert error_of(no_target) == "Error executing tool continue_run: Provide exactly one of agent_id, team_id, or workflow_id"
    assert still == "PAUSED"  # no refused call moved it
    assert (done["run_id"], done["status"], done["tools"][0]["result"]) == (paused["run_id"], "COMPLETED", "deleted q.txt")
    assert error_of(again) == f"Error executing tool continue_run: Run {paused['run_id']} is COMPLETED, not PAUSED: there is nothing to continue"
    assert runs_of("alice") == [("hitl-agent", "COMPLETED")]
    assert runs_of("bob") == []


def test_a_rejected_tool_call_is_not_run(live_api, jwt_server):
    alice = token("alice")
    paused = body(call(live_api, alice, "run_agent", {"agent_id": "hitl-agent", "message": DELETE}))

    done = body(call(live_api, alice, "continue_run", {
        "agent_id": "hitl-agent", "run_id": paused["run_id"], "session_id": paused["session_id"],
        "tools": [{**paused["tools"][0], "confirmed": False}],
    }))

    (tool,) = done["tools"]
    assert (done["status"], tool["confirmed"]) == ("COMPLETED", False)
    assert "deleted q.txt" not in (tool.get("result") or "")


def test_a_run_is_cancelled_over_mcp_by_its_owner_only(live_api, fake_openai, jwt_server):
    gate = threading.Event()
    fake_openai.push(Reply(text="one two three four", gate=gate, gate_after=1))
    answer: dict = {}
    running = threading.Thread(target=lambda: answer.update(result=call(live_api, token("alice"), "run_agent", {"agent_id": "openai-agent", "message": "talk slowly"})))
    running.start()
    try:
        run = wait_for(lambda: Run.objects.for_user("alice").filter(status="RUNNING").first())
        target = {"agent_id": "openai-agent", "run_id": run.pk}

        by_bob = text_of(call(live_api, token("bob"), "cancel_run", {**target, "session_id": run.session_id}))
        by_bob_own = text_of(call(live_api, token("bob"), "cancel_run", {**target, "session_id": "bobs-own"}))
        by_reader = call(live_api, token("alice", READ_ONLY), "cancel_run", {**target, "session_id": run.session_id})
        no_session = call(live_api, token("alice"), "cancel_run", target)
        untouched = (Run.objects.for_user("alice").get(pk=run.pk).status, CancelIntent.objects.unscoped("test").filter(run_id=run.pk).exists())
        by_alice = text_of(call(live_api, token("alice"), "cancel_run", {**target, "session_id": run.session_id}))
    finally:
        gate.set()
        running.join(timeout=60)

    # Bob is answered as for an unknown run (nothing tells him it exists), and nothing is recorded.
    assert by_bob == by_bob_own == by_alice == f"Run {run.pk} cancellation requested"
    assert error_of(by_reader) == "Error executing tool cancel_run: Insufficient permissions. Required scope(s): agents:run"
    assert error_of(no_session) == "Error executing tool cancel_run: session_id is required for this action"
    assert untouched == ("RUNNING", False)
    assert (body(answer["result"])["status"], body(answer["result"])["run_id"]) == ("CANCELLED", run.pk)
    assert wait_for(lambda: Run.objects.for_user("alice").get(pk=run.pk).status == "CANCELLED")


def test_sessions_are_paged_and_filtered_and_a_run_is_read_in_full(live_api, jwt_server):
    alice = token("alice")
    first = body(call(live_api, alice, "run_agent", {"agent_id": "assistant", "message": "What is 2 + 2?"}))
    other = body(call(live_api, alice, "run_agent", {"agent_id": "hitl-agent", "message": "hello"}))
    bobs = body(call(live_api, token("bob"), "run_agent", {"agent_id": "assistant", "message": "bob's secret"}))

    page = body(call(live_api, alice, "get_sessions", {"limit": 1, "sort_order": "asc"}))
    of_assistant = body(call(live_api, alice, "get_sessions", {"component_id": "assistant"}))
    full = body(call(live_api, alice, "get_session_runs", {"session_id": first["session_id"], "run_id": first["run_id"]}))["runs"]
    bobs_run = call(live_api, alice, "get_session_runs", {"session_id": bobs["session_id"], "run_id": bobs["run_id"]})
    bobs_run_in_mine = call(live_api, alice, "get_session_runs", {"session_id": first["session_id"], "run_id": bobs["run_id"]})

    assert [s["session_id"] for s in page["data"]] == [first["session_id"]]
    assert page["meta"] == {"page": 1, "limit": 1, "total_count": 2, "total_pages": 2}
    assert [(s["session_id"], s["component_id"], s["user_id"]) for s in of_assistant["data"]] == [(first["session_id"], "assistant", "alice")]
    assert other["session_id"] != first["session_id"]
    (run,) = full
    assert (run["run_id"], run["agent_id"], run["status"], run["run_input"]) == (first["run_id"], "assistant", "COMPLETED", "What is 2 + 2?")
    assert [m["role"] for m in run["messages"]][-2:] == ["user", "assistant"]
    assert error_of(bobs_run) == "Error executing tool get_session_runs: Session not found"
    assert error_of(bobs_run_in_mine) == f"Error executing tool get_session_runs: Run {bobs['run_id']} not found in session {first['session_id']}"


def test_an_mcp_servers_tools_under_an_operators_policy_pause_and_continue_over_mcp(live_api, jwt_server, settings):
    from agents.models import MCPToolPolicy
    from agents.services.definitions import definition_create
    from approvals.gate import ADMIN_APPROVAL_REQUIRED

    settings.MCP_SERVERS = {"demo": "python -m mcp_server.demo_tools"}
    definition_create(agent_id="planets", name="Planets", model="offline:demo", tools=["mcp:demo"])
    MCPToolPolicy.objects.create(server="demo", requires_confirmation_tools=["count_words"], approval_tools=["planet_facts"])
    alice = token("alice")

    counting = body(call(live_api, alice, "run_agent", {"agent_id": "planets", "message": '/call count_words {"text": "one two three"}'}))
    counted = body(call(live_api, alice, "continue_run", {
        "agent_id": "planets", "run_id": counting["run_id"], "session_id": counting["session_id"],
        "requirements": [{**requirement, "confirmation": True} for requirement in counting["requirements"]],
    }))
    awaiting = body(call(live_api, alice, "run_agent", {"agent_id": "planets", "message": '/call planet_facts {"name": "Mars"}'}))
    decided = {
        "agent_id": "planets", "run_id": awaiting["run_id"], "session_id": awaiting["session_id"],
        "requirements": [{**requirement, "confirmation": True} for requirement in awaiting["requirements"]],
    }
    # Only an admin or a holder of approvals:write decides a pending approval (AgentOS's rule).
    self_approved = call(live_api, token("alice", ["agents:read", "agents:run", "sessions:read"]), "continue_run", decided)
    still = Run.objects.for_user("alice").get(pk=awaiting["run_id"]).status
    approver = body(call(live_api, alice, "continue_run", decided))

    assert (counting["status"], counting["tools"][0]["tool_name"]) == ("PAUSED", "count_words")
    assert (counted["status"], counted["tools"][0]["result"]) == ("COMPLETED", "3")
    assert (awaiting["status"], awaiting["tools"][0]["approval_type"]) == ("PAUSED", "required")
    assert error_of(self_approved) == f"Error executing tool continue_run: {ADMIN_APPROVAL_REQUIRED}"
    assert still == "PAUSED"
    assert (approver["status"], approver["tools"][0]["result"]) == ("COMPLETED", "Mars: 2 moon(s), a day of 24.7 hours, 1.52 AU from the Sun.")


def test_a_teams_paused_member_is_continued_over_mcp_with_the_team_id(live_api, jwt_server):
    alice = token("alice")
    task = "/call delegate_task_to_member " + json.dumps({"member_id": "hitl-member", "task": '/call delete_file {"path": "x.txt"}'})
    paused = body(call(live_api, alice, "run_team", {"team_id": "hitl-team", "message": task}))
    target = {"run_id": paused["run_id"], "session_id": paused["session_id"]}
    resolved = [{**requirement, "confirmation": True} for requirement in paused["requirements"]]

    as_agent = call(live_api, alice, "continue_run", {**target, "agent_id": "hitl-agent", "requirements": resolved})
    done = body(call(live_api, alice, "continue_run", {**target, "team_id": "hitl-team", "requirements": resolved}))

    assert (paused["status"], paused["requirements"][0]["member_agent_id"]) == ("PAUSED", "hitl-member")
    assert error_of(as_agent) == "Error executing tool continue_run: Run not found"  # the run is the team's
    assert (done["status"], done["team_id"], done["content"]) == ("COMPLETED", "hitl-team", "Tool delete_file returned: deleted x.txt")


def test_a_workflows_review_is_continued_over_mcp_with_its_step_requirements(live_api, jwt_server):
    alice = token("alice")
    paused = body(call(live_api, alice, "run_workflow", {"workflow_id": "review-flow", "message": "ship it"}))
    (requirement,) = paused["step_requirements"]
    target = {"workflow_id": "review-flow", "run_id": paused["run_id"], "session_id": paused["session_id"]}

    done = body(call(live_api, alice, "continue_run", {**target, "requirements": [{**requirement, "confirmed": True}]}))
    again = call(live_api, alice, "continue_run", {**target, "requirements": [{**requirement, "confirmed": True}]})

    assert paused["status"] == "PAUSED"
    assert (done["status"], done["workflow_id"], done["content"]) == ("COMPLETED", "review-flow", "SHIP IT")
    assert error_of(again) == "Error executing tool continue_run: run is already completed"
