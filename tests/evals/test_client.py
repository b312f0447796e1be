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

    judge.push(Reply(text=json.dumps({"accuracy_score": 3, "accuracy_reason": "Not what was expected."})))
    accuracy = run(client.run_eval(EvalType.ACCURACY, "hello", agent_id="assistant", expected_output="hi there"))
    assert (accuracy.eval_data["avg_score"], accuracy.eval_data["results"][0]["reason"]) == (3, "Not what was expected.")

    performance = run(client.run_eval(EvalType.PERFORMANCE, "hello", team_id="research-team", num_iterations=2))
    assert (performance.team_id, len(performance.eval_data["run_times"])) == ("research-team", 2)

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

    run(client.delete_eval_runs([accuracy.id, reliability.id]))
    assert list(EvalRun.objects.unscoped("test").values_list("pk", flat=True)) == [performance.id]
