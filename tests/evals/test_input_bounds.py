"""Every text an eval route stores fits its column, and NUL is refused, as a 4xx on both
databases (issue 31, item 8: PostgreSQL answered 500 to a name or model_id over 255 characters)."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evals.models import EvalDataset, EvalRun
from evals.services import EvalInvalid, dataset_cases_parse
from tests.factories import make_eval_run

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"eval_type": "performance", "input": "hi", "agent_id": "assistant"}


@pytest.mark.parametrize("field", ["name", "model_id", "model_provider", "agent_id", "team_id", "workflow_id"])
def test_a_text_longer_than_its_column_is_a_422(client, field) -> None:
    body = {**BODY, field: "x" * 256}
    if field in ("team_id", "workflow_id"):
        body.pop("agent_id")
    if field in ("model_id", "model_provider"):
        body = {**body, "model_id": "gpt-4o-mini", "model_provider": "openai", field: "x" * 256}
    response = client.post("/eval-runs?background=true", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"] == ["body", field]
    assert not EvalRun.objects.unscoped("test").exists()


def test_a_name_of_255_characters_is_taken(client) -> None:
    response = client.post("/eval-runs?background=true", data=json.dumps({**BODY, "name": "x" * 255}), content_type="application/json")
    assert response.status_code == 202 and response.json()["name"] == "x" * 255


@pytest.mark.parametrize("body", [
    {**BODY, "name": "a\x00b"}, {**BODY, "input": "\x00"}, {**BODY, "agent_id": "assistant\x00"},
    {**BODY, "eval_type": "reliability", "expected_tool_calls": ["add\x00"]},
    {**BODY, "eval_type": "reliability", "expected_tool_calls": ["add"], "expected_tool_call_arguments": {"add": {"a\x00": 1}}},
    {**BODY, "file_path_to_save_results": "{run_id}\x00.json"},
])
def test_nul_in_any_field_of_a_post_is_a_422(client, body) -> None:
    response = client.post("/eval-runs?background=true", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 422, response.content
    assert "Null characters are not allowed." in json.dumps(response.json())


def test_nul_in_a_rename_is_a_422(client) -> None:
    make_eval_run("alice", run_id="r1")
    response = client.patch("/eval-runs/r1", data=json.dumps({"name": "a\x00"}), content_type="application/json")
    assert response.status_code == 422


@pytest.mark.parametrize(("content", "message"), [
    (json.dumps([{"input": "a\x00", "expected_output": "b"}]), "Case 1 holds a NUL character"),
    (json.dumps([{"input": "a", "expected_output": "b\x00"}]), "Case 1 holds a NUL character"),
    ("input,expected_output\na\x00,b\n", "Case 1 holds a NUL character"),
    ("[" * 5000 + "]" * 5000, "nested too deep"),
    (b"input,expected_output\n\xff\xfe,b\n", "not UTF-8"),
])
def test_a_dataset_with_nul_or_that_is_not_text_is_refused(content, message) -> None:
    with pytest.raises(EvalInvalid, match=message):
        dataset_cases_parse(content=content)


def test_a_dataset_upload_with_nul_is_a_form_error_in_the_admin(client, django_user_model) -> None:
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    upload = SimpleUploadedFile("cases.json", json.dumps([{"input": "2+2\x00", "expected_output": "4"}]).encode(), content_type="application/json")
    response = client.post(reverse("admin:evals_evaldataset_add"), {"name": "nul", "description": "", "owner": "", "upload": upload})
    assert response.status_code == 200 and "Case 1 holds a NUL character" in response.content.decode()
    assert not EvalDataset.all_users.exists()
