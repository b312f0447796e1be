"""/eval-runs: AgentOS's shapes, filters, paging and sorting, its errors in {"detail": ...},
scopes, and per-user isolation (another user's eval run is a 404)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from evals.models import EvalRun
from tests.factories import make_eval_run
from tests.security.conftest import auth, token

# Transactional: GET, POST and DELETE /eval-runs are async views, whose database work runs in the
# run threads, on connections of their own.
pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


def _rows() -> dict[str, EvalRun]:
    return {
        "r1": make_eval_run("alice", run_id="r1", name="tools", created_at=T0, updated_at=T0),
        "a1": make_eval_run("alice", run_id="a1", eval_type="accuracy", model_id="gpt-4o-mini", model_provider="OpenAI",
                            eval_data={"avg_score": 8}, score=8.0, created_at=T0 + timedelta(minutes=1), updated_at=T0 + timedelta(minutes=1)),
        "t1": make_eval_run("alice", run_id="t1", eval_type="performance", agent_id=None, team_id="research-team", component_kind="team",
                            eval_data={"run_times": [0.1]}, created_at=T0 + timedelta(minutes=2), updated_at=T0 + timedelta(minutes=2)),
        "w1": make_eval_run("alice", run_id="w1", eval_type="agent_as_judge", agent_id=None, workflow_id="draft-flow", component_kind="workflow",
                            created_at=T0 + timedelta(minutes=3), updated_at=T0 + timedelta(minutes=3)),
    }


def test_a_listed_eval_run_has_agentos_shape(client) -> None:
    _rows()
    body = client.get("/eval-runs", {"agent_id": "assistant", "eval_types": "reliability"}).json()
    assert body == {
        "data": [{
            "id": "r1", "agent_id": "assistant", "model_id": "demo", "model_provider": "Offline", "team_id": None, "workflow_id": None,
            "name": "tools", "evaluated_component_name": None, "user_id": "alice", "eval_type": "reliability",
            "eval_data": {"run_id": "r1", "eval_status": "PASSED", "passed_tool_calls": ["add"], "failed_tool_calls": []},
            "eval_input": {"input": "hi", "expected_tool_calls": ["add"]},
            "created_at": "2026-11-30T09:00:00Z", "updated_at": "2026-11-30T09:00:00Z",
            "status": "completed", "error": None, "progress": None, "score": None,
        }],
        "meta": {"page": 1, "limit": 20, "total_pages": 1, "total_count": 1, "search_time_ms": 0.0},
    }


def test_a_performance_eval_reads_back_as_agentos_stores_it(client) -> None:
    """AgentOS answers the run with the PerformanceResult, and stores (so gets, lists and renames)
    its statistics as ``result`` and each measured run as ``runs``; the other kinds read back as run."""
    make_eval_run("alice", run_id="p1", eval_type="performance", eval_data={
        "run_times": [0.25, 0.75], "avg_run_time": 0.5, "p95_run_time": 0.725, "memory_usages": [1.5, 2.5], "avg_memory_usage": 2.0,
    })
    stored = {
        "result": {"avg_run_time": 0.5, "p95_run_time": 0.725, "avg_memory_usage": 2.0},
        "runs": [{"runtime": 0.25, "memory": 1.5}, {"runtime": 0.75, "memory": 2.5}],
    }
    assert client.get("/eval-runs/p1").json()["eval_data"] == stored
    assert client.get("/eval-runs", {"eval_types": "performance"}).json()["data"][0]["eval_data"] == stored
    renamed = client.patch("/eval-runs/p1", data=json.dumps({"name": "latency"}), content_type="application/json").json()
    assert (renamed["name"], renamed["eval_data"]) == ("latency", stored)
    make_eval_run("alice", run_id="q1", eval_type="performance", status="running", eval_data={})
    assert client.get("/eval-runs/q1").json()["eval_data"] == {}  # no result yet: nothing to shape


@pytest.mark.parametrize(("query", "expected"), [
    ({}, ["w1", "t1", "a1", "r1"]),
    ({"sort_order": "asc"}, ["r1", "a1", "t1", "w1"]),
    ({"sort_by": "no_such_column", "sort_order": "asc"}, ["r1", "a1", "t1", "w1"]),
    ({"sort_by": "eval_type", "sort_order": "asc"}, ["a1", "w1", "t1", "r1"]),
    ({"type": "team"}, ["t1"]),
    ({"type": "workflow"}, ["w1"]),
    ({"team_id": "research-team"}, ["t1"]),
    ({"workflow_id": "draft-flow"}, ["w1"]),
    ({"model_id": "gpt-4o-mini"}, ["a1"]),
    ({"eval_types": "accuracy,performance"}, ["t1", "a1"]),
    ({"limit": "2", "page": "2"}, ["a1", "r1"]),
    ({"limit": "2", "page": "9"}, []),
])
def test_filters_paging_and_sorting(client, query, expected) -> None:
    _rows()
    response = client.get("/eval-runs", query)
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["data"]] == expected


@pytest.mark.parametrize("query", [{"page": "0", "limit": "5"}, {"limit": "0"}, {"type": "robot"}, {"eval_types": "accuracy,vibes"}, {"sort_order": "up"}])
def test_bad_query_parameters_are_422(client, query) -> None:
    response = client.get("/eval-runs", query)
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list)


def test_get_rename_and_delete_many(client) -> None:
    _rows()
    assert client.get("/eval-runs/a1").json()["score"] == 8.0
    renamed = client.patch("/eval-runs/a1", data=json.dumps({"name": "accuracy v2"}), content_type="application/json")
    assert (renamed.status_code, renamed.json()["name"]) == (200, "accuracy v2")
    assert EvalRun.objects.for_user("alice").get(pk="a1").name == "accuracy v2"
    deleted = client.delete("/eval-runs", data=json.dumps({"eval_run_ids": ["a1", "t1", "unknown"]}), content_type="application/json")
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert sorted(EvalRun.objects.for_user("alice").values_list("pk", flat=True)) == ["r1", "w1"]
    assert client.get("/eval-runs/a1").json() == {"detail": "Eval run not found"}


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("patch", "/eval-runs/r1", {"name": ""}, 422),
    ("patch", "/eval-runs/r1", {}, 422),
    ("patch", "/eval-runs/r1", {"name": "x" * 256}, 422),
    ("patch", "/eval-runs/nope", {"name": "x"}, 404),
    ("delete", "/eval-runs", {"eval_run_ids": []}, 422),
    ("delete", "/eval-runs", {}, 422),
    ("delete", "/eval-runs", ["r1"], 422),
    ("post", "/eval-runs", {"input": "hi", "agent_id": "assistant"}, 422),
    ("post", "/eval-runs", {"eval_type": "vibes", "input": "hi", "agent_id": "assistant"}, 422),
    ("post", "/eval-runs", {"eval_type": "performance", "input": "", "agent_id": "assistant"}, 422),
    ("post", "/eval-runs", {"eval_type": "performance", "input": "hi", "agent_id": "assistant", "num_iterations": 101}, 422),
    ("post", "/eval-runs", {"eval_type": "performance", "input": "hi", "agent_id": "assistant", "warmup_runs": 11}, 422),
    ("post", "/eval-runs", {"eval_type": "agent_as_judge", "input": "hi", "agent_id": "assistant", "criteria": "c", "threshold": 0}, 422),
    ("post", "/eval-runs", {"eval_type": "reliability", "input": "hi", "agent_id": "assistant", "expected_tool_call_arguments": {"add": 3}}, 422),
])
def test_bad_bodies_are_4xx_with_a_detail(client, method, path, body, status) -> None:
    make_eval_run("alice", run_id="r1")
    response = getattr(client, method)(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code == status, response.content
    assert "detail" in response.json()


@pytest.mark.parametrize(("body", "detail", "status"), [
    ({"eval_type": "accuracy", "input": "hi", "agent_id": "assistant"}, "expected_output is required for accuracy evaluation", 400),
    ({"eval_type": "agent_as_judge", "input": "hi", "agent_id": "assistant"}, "criteria is required for agent-as-judge evaluation", 400),
    ({"eval_type": "reliability", "input": "hi", "agent_id": "assistant"}, "expected_tool_calls is required for reliability evaluations", 400),
    ({"eval_type": "performance", "input": "hi"}, "One of agent_id or team_id must be provided", 400),
    ({"eval_type": "performance", "input": "hi", "agent_id": "assistant", "team_id": "research-team"}, "Only one of agent_id or team_id must be provided", 400),
    ({"eval_type": "performance", "input": "hi", "agent_id": "ghost"}, "Agent with id 'ghost' not found", 404),
    ({"eval_type": "performance", "input": "hi", "team_id": "ghost"}, "Team with id 'ghost' not found", 404),
    ({"eval_type": "performance", "input": "hi", "agent_id": "assistant", "model_id": "x", "model_provider": "nobody"}, "Unknown model provider 'nobody' in 'nobody:x'; known providers: openai, anthropic, offline", 400),
])
def test_evals_that_cannot_run_are_refused_before_anything_is_stored(client, body, detail, status) -> None:
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json")
    assert (response.status_code, response.json()) == (status, {"detail": detail})
    assert not EvalRun.objects.unscoped("test").exists()


def test_a_workflow_without_a_judge_model_is_refused_for_judged_evals(client, settings) -> None:
    settings.EVALS_JUDGE_MODEL = ""
    body = {"eval_type": "accuracy", "input": "hi", "workflow_id": "draft-flow", "expected_output": "HI"}
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and "EVALS_JUDGE_MODEL" in response.json()["detail"]


# ---- isolation and scopes ---------------------------------------------------------------------

EVAL_SCOPES = ["evals:read", "evals:write", "evals:delete", "agents:read"]


def test_another_users_eval_run_is_a_404_and_stays_theirs(client, jwt_server) -> None:
    make_eval_run("alice", run_id="alice-eval", name="mine")
    make_eval_run("bob", run_id="bob-eval")
    bob = auth(token("bob", EVAL_SCOPES))
    assert client.get("/eval-runs/alice-eval", **bob).status_code == 404
    assert client.patch("/eval-runs/alice-eval", data=json.dumps({"name": "taken"}), content_type="application/json", **bob).status_code == 404
    assert [item["id"] for item in client.get("/eval-runs", **bob).json()["data"]] == ["bob-eval"]
    assert client.delete("/eval-runs", data=json.dumps({"eval_run_ids": ["alice-eval", "bob-eval"]}), content_type="application/json", **bob).status_code == 204
    assert list(EvalRun.all_users.values_list("pk", "name")) == [("alice-eval", "mine")]
    admin = auth(token("root", ["agent_os:admin"]))
    assert client.get("/eval-runs/alice-eval", **admin).json()["user_id"] == "alice"


@pytest.mark.parametrize(("method", "path", "body", "scope"), [
    ("get", "/eval-runs", None, "evals:read"),
    ("get", "/eval-runs/alice-eval", None, "evals:read"),
    ("post", "/eval-runs", {"eval_type": "performance", "input": "hi", "agent_id": "assistant"}, "evals:write"),
    ("patch", "/eval-runs/alice-eval", {"name": "x"}, "evals:write"),
    ("delete", "/eval-runs", {"eval_run_ids": ["alice-eval"]}, "evals:delete"),
])
def test_each_operation_needs_its_scope(client, jwt_server, method, path, body, scope) -> None:
    make_eval_run("alice", run_id="alice-eval")
    others = [s for s in EVAL_SCOPES if s != scope]
    kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
    refused = getattr(client, method)(path, **kwargs, **auth(token("alice", others)))
    assert (refused.status_code, refused.json()) == (403, {"detail": f"Insufficient permissions. Required scope(s): {scope}"})
    if method != "post":  # a granted POST would start an eval (tests/evals/test_kinds.py runs them)
        assert getattr(client, method)(path, **kwargs, **auth(token("alice", [scope]))).status_code in (200, 204)


def test_an_agent_the_caller_may_not_see_is_as_missing_as_an_unknown_one(client, jwt_server) -> None:
    body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant"}
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json", **auth(token("alice", ["evals:write", "agents:hitl-agent:read"])))
    assert (response.status_code, response.json()) == (404, {"detail": "Agent with id 'assistant' not found"})


def test_a_page_is_two_queries(django_assert_num_queries) -> None:
    from core.tenancy import ALL_USERS
    from evals.selectors import EvalRunFilters, eval_run_list

    _rows()
    with django_assert_num_queries(2):
        rows, total = eval_run_list(user=ALL_USERS, filters=EvalRunFilters(eval_types=("accuracy", "reliability")), sort_by=None, descending=True, offset=0, limit=20)
    assert ([row.pk for row in rows], total) == (["a1", "r1"], 2)


def test_config_names_the_evals_domain(client, settings) -> None:
    db = f"{settings.AGENT_OS_ID}-db"
    assert client.get("/config").json()["evals"] == {"dbs": [{"db_id": db, "domain_config": {"display_name": db}, "tables": ["agno_eval_runs"]}]}
