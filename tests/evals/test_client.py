"""Agno's own AgentOSClient against the live server: run_eval, list_eval_runs (with its filters),
get_eval_run, update_eval_run and delete_eval_runs."""
from __future__ import annotations

import json

import pytest
from agno.client.os import AgentOSClient
from agno.db.schemas.evals import EvalFilterType, EvalType

from evals.models import EvalRun
from tests.api.test_agents_conformance import run
from tests.fakes.openai_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)

ADD = '/call add {"a": 2, "b": 3}'


def test_agentos_client_runs_lists_reads_renames_and_deletes_evals(live_api, worker, judge) -> None:
    client = AgentOSClient(base_url=live_api, timeout=60)
    reliability = run(client.run_eval(EvalType.RELIABILITY, ADD, agent_id="assistant", expected_tool_calls=["add"]))
    assert (reliability.eval_type, reliability.agent_id, reliability.eval_data["eval_status"]) == (EvalType.RELIABILITY, "assistant", "PASSED")
    assert reliability.eval_data["run_id"] == reliability.id  # the ReliabilityResult, as AgentOS answers a run

    judge.push(Reply(text=json.dumps({"accuracy_score": 3, "accuracy_reason": "Not what was expected."})))
    accuracy = run(client.run_eval(EvalType.ACCURACY, "hello", agent_id="assistant", expected_output="hi there"))
    assert (accuracy.eval_data["avg_score"], accuracy.eval_data["results"][0]["reason"]) == (3, "Not what was expected.")

    performance = run(client.run_eval(EvalType.PERFORMANCE, "hello", team_id="research-team", num_iterations=2))
    assert (performance.team_id, len(performance.eval_data["run_times"])) == ("research-team", 2)
    assert performance.eval_data["run_id"] == performance.id and accuracy.eval_data["run_id"] == accuracy.id

    listed = run(client.list_eval_runs())
    assert [item.id for item in listed.data] == [performance.id, accuracy.id, reliability.id]
    assert listed.meta.total_count == 3
    assert [item.id for item in run(client.list_eval_runs(eval_types=[EvalType.ACCURACY, EvalType.RELIABILITY])).data] == [accuracy.id, reliability.id]
    assert [item.id for item in run(client.list_eval_runs(filter_type=EvalFilterType.TEAM)).data] == [performance.id]
    assert [item.id for item in run(client.list_eval_runs(agent_id="assistant", limit=1, page=2, sort_order="desc")).data] == [reliability.id]

    fetched = run(client.get_eval_run(accuracy.id))
    assert (fetched.id, fetched.eval_input["expected_output"]) == (accuracy.id, "hi there")
    renamed = run(client.update_eval_run(accuracy.id, name="greeting accuracy"))
    assert renamed.name == "greeting accuracy"
    assert run(client.get_eval_run(reliability.id)).eval_data == reliability.eval_data

    # A performance eval reads back as AgentOS stores it: its statistics and each measured run.
    stored = run(client.get_eval_run(performance.id)).eval_data
    assert set(stored) == {"result", "runs"} and stored["result"]["avg_run_time"] == performance.eval_data["avg_run_time"]
    assert [sample["runtime"] for sample in stored["runs"]] == performance.eval_data["run_times"]
    assert [sample["memory"] for sample in stored["runs"]] == performance.eval_data["memory_usages"]
    assert run(client.update_eval_run(performance.id, name="team latency")).eval_data == stored

    run(client.delete_eval_runs([accuracy.id, reliability.id]))
    assert list(EvalRun.objects.unscoped("test").values_list("pk", flat=True)) == [performance.id]
