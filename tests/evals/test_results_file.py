"""file_path_to_save_results, Agno's option: a template of ``{run_id}`` (and ``{name}``);
``{eval_id}`` is refused with a message saying what to use; files stay inside EVALS_RESULTS_DIR."""
from __future__ import annotations

import json

import pytest

from evals.models import EvalRun
from evals.results import InvalidResultPath, result_path, result_path_check

ADD = '/call add {"a": 2, "b": 3}'


def test_eval_id_is_refused_naming_run_id() -> None:
    with pytest.raises(InvalidResultPath) as refused:
        result_path_check("results/{name}-{eval_id}.json")
    assert str(refused.value) == (
        "file_path_to_save_results: {eval_id} is no longer accepted (Agno v3); use {run_id}, "
        "the id of this eval run, which every re-run gets anew"
    )


@pytest.mark.parametrize("template", ["/etc/{run_id}.json", "../{run_id}.json", "a/../../{run_id}", "{run_id.__class__}", "{0}.json", "{", ""])
def test_templates_that_leave_the_directory_or_name_unknown_fields_are_refused(template) -> None:
    with pytest.raises(InvalidResultPath):
        result_path_check(template)


def test_a_name_cannot_smuggle_a_path_out(tmp_path) -> None:
    with pytest.raises(InvalidResultPath):
        result_path(root=tmp_path, template="{name}/{run_id}.json", run_id="r1", name="../../etc")
    assert result_path(root=tmp_path, template="evals/{name}-{run_id}.json", run_id="r1", name="sums") == tmp_path.resolve() / "evals" / "sums-r1.json"


@pytest.mark.django_db(transaction=True)
def test_the_api_refuses_eval_id_before_anything_runs(client, settings, tmp_path) -> None:
    settings.EVALS_RESULTS_DIR = str(tmp_path)
    body = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "expected_tool_calls": ["add"], "file_path_to_save_results": "{eval_id}.json"}
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and "{eval_id} is no longer accepted" in response.json()["detail"] and "{run_id}" in response.json()["detail"]
    assert not EvalRun.objects.unscoped("test").exists()


@pytest.mark.django_db(transaction=True)
def test_result_files_are_refused_where_no_directory_is_configured(client, settings) -> None:
    settings.EVALS_RESULTS_DIR = None
    body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant", "file_path_to_save_results": "{run_id}.json"}
    response = client.post("/eval-runs", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and "EVALS_RESULTS_DIR" in response.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_each_re_run_writes_its_own_file_under_its_run_id(client, settings, tmp_path, worker) -> None:
    settings.EVALS_RESULTS_DIR = str(tmp_path)
    body = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "expected_tool_calls": ["add"], "name": "sums", "file_path_to_save_results": "out/{name}-{run_id}.json"}
    first = client.post("/eval-runs", data=json.dumps(body), content_type="application/json").json()
    second = client.post("/eval-runs", data=json.dumps(body), content_type="application/json").json()
    assert first["id"] != second["id"]
    for result in (first, second):
        written = tmp_path / "out" / f"sums-{result['id']}.json"
        assert json.loads(written.read_text()) == result["eval_data"]
        assert result["eval_data"]["eval_status"] == "PASSED"
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == sorted(f"sums-{r['id']}.json" for r in (first, second))
