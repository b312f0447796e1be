"""file_path_to_save_results, Agno's option: a template of ``{run_id}`` (and ``{name}``);
``{eval_id}`` is refused with a message saying what to use; files stay inside their owner's folder
of EVALS_RESULTS_DIR. A template is no Python format string: a format spec or conversion is
refused when the eval is submitted, and so is a path past the file system's bounds."""
from __future__ import annotations

import json

import pytest

from evals.models import EvalRun
from evals.results import OWNER_FOLDER_CHARS, InvalidResultPath, owner_folder, result_path, result_path_check
from tests.security.conftest import auth, token

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
        result_path(root=tmp_path, template="{name}/{run_id}.json", run_id="r1", name="../../etc", owner_id="alice")
    with pytest.raises(InvalidResultPath):  # out of alice's folder into bob's
        result_path(root=tmp_path, template="{name}/{run_id}.json", run_id="r1", name="../bob", owner_id="alice")
    assert result_path(root=tmp_path, template="evals/{name}-{run_id}.json", run_id="r1", name="sums", owner_id="alice") == (
        tmp_path.resolve() / "alice" / "evals" / "sums-r1.json"
    )


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
    folder = tmp_path / owner_folder(first["user_id"]) / "out"
    for result in (first, second):
        written = folder / f"sums-{result['id']}.json"
        assert json.loads(written.read_text()) == result["eval_data"]
        assert result["eval_data"]["eval_status"] == "PASSED"
    assert sorted(path.name for path in folder.iterdir()) == sorted(f"sums-{r['id']}.json" for r in (first, second))


# ---- a template, not a format string (issue 31, item 4) -----------------------------------------

@pytest.mark.parametrize("template", ["{run_id:>999999999}", "out/{name!r}.json", "{run_id:{name}}", "{name:.3}-{run_id}", "{run_id!s:>9}"])
def test_a_format_spec_or_conversion_is_refused(template) -> None:
    with pytest.raises(InvalidResultPath, match="takes no format spec or conversion"):
        result_path_check(template)


@pytest.mark.parametrize(("template", "name", "message"), [
    ("{name}.json", "x" * 251, "a folder or file name takes at most 255 bytes"),
    ("{name}{run_id}.json", "x" * 215, "a folder or file name takes at most 255 bytes"),
    ("{name}.json", "é" * 126, "a folder or file name takes at most 255 bytes"),  # 252 bytes, and ".json"
    ("a/" * 1900 + "{name}.json", "x" * 200, "it takes at most"),
    ("x" * 4097, None, "a path takes at most 4096 bytes"),
    ("{name}/{run_id}.json", "../../etc", "must be a relative path inside"),
    ("{name}", "/etc/passwd", "must be a relative path inside"),
])
def test_the_filled_path_is_bounded_and_stays_inside(template, name, message, tmp_path) -> None:
    with pytest.raises(InvalidResultPath, match=message) as refused:
        result_path_check(template, name=name, root=tmp_path)
    assert len(str(refused.value)) < 400  # the message quotes a bounded part of what it refuses


def test_a_name_and_path_within_the_bounds_are_taken(tmp_path) -> None:
    result_path_check("{name}.json", name="x" * 250, root=tmp_path)
    result_path_check("a/" * 1000 + "{name}-{run_id}.json", name="x" * 200, root=tmp_path)


@pytest.mark.django_db(transaction=True)
def test_the_api_refuses_a_format_template_at_once_and_stores_nothing(client, settings, tmp_path, caplog) -> None:
    settings.EVALS_RESULTS_DIR = str(tmp_path)
    body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant", "file_path_to_save_results": "{run_id:>999999999}"}
    response = client.post("/eval-runs?background=true", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    assert "{run_id} takes no format spec or conversion" in response.json()["detail"] and len(response.json()["detail"]) < 400
    assert not EvalRun.objects.unscoped("test").exists()
    assert all(len(record.getMessage()) < 10_000 for record in caplog.records)


@pytest.mark.django_db(transaction=True)
def test_the_api_checks_the_filled_path_when_the_eval_is_submitted(client, settings, tmp_path) -> None:
    settings.EVALS_RESULTS_DIR = str(tmp_path)
    body = {"eval_type": "performance", "input": "hi", "agent_id": "assistant", "name": "n" * 250, "file_path_to_save_results": "{name}-{run_id}.json"}
    response = client.post("/eval-runs?background=true", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and "at most 255 bytes" in response.json()["detail"]
    smuggled = {**body, "name": "../../elsewhere", "file_path_to_save_results": "{name}/{run_id}.json"}
    response = client.post("/eval-runs?background=true", data=json.dumps(smuggled), content_type="application/json")
    assert response.status_code == 400 and "inside this server's EVALS_RESULTS_DIR" in response.json()["detail"]
    assert not EvalRun.objects.unscoped("test").exists()


# ---- a folder per owner (issue 31, item 11) -------------------------------------------------------

def test_every_owner_has_a_folder_of_their_own() -> None:
    ids = [None, "alice", "a:b", "a_b", "a_3Ab", "a.b", ".", "..", "../x", "sa:0f2e", "Alice", "é", "x" * 500, "x" * 500 + "y", "_shared"]
    folders = [owner_folder(owner) for owner in ids]
    assert len(set(folders)) == len(ids)
    assert folders[:3] == ["_shared", "alice", "a_3Ab"]
    for folder in folders:
        assert "/" not in folder and folder not in (".", "..") and 0 < len(folder) <= OWNER_FOLDER_CHARS


@pytest.mark.django_db(transaction=True)
def test_two_users_files_of_the_same_name_do_not_overwrite_each_other(client, jwt_server, settings, tmp_path, worker) -> None:
    settings.EVALS_RESULTS_DIR = str(tmp_path)
    body = {"eval_type": "reliability", "input": ADD, "agent_id": "assistant", "name": "sums", "file_path_to_save_results": "{name}.json"}
    written = {}
    for user, expected in (("alice", ["add"]), ("bob", ["multiply"])):  # alice's passes, bob's fails: two different results
        response = client.post("/eval-runs", data=json.dumps({**body, "expected_tool_calls": expected}), content_type="application/json", **auth(token(user)))
        assert response.status_code == 200, response.content
        written[user] = response.json()
    assert [written[user]["eval_data"]["eval_status"] for user in ("alice", "bob")] == ["PASSED", "FAILED"]
    for user, result in written.items():
        assert result["status"] == "completed"
        assert json.loads((tmp_path / user / "sums.json").read_text()) == result["eval_data"]
    assert not (tmp_path / "sums.json").exists()
