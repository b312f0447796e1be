"""Datasets of {input, expected_output} cases, uploaded as JSON or CSV (service and admin), run as
a batch (one background job, one eval run per case) with an aggregate score; the admin shows
eval runs with their status, score and error, and a score trend per agent."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evals.models import EvalBatch, EvalDataset, EvalRun
from evals.services import EvalInvalid, batch_create, dataset_cases_parse, dataset_create
from tests.agents.conftest import wait_for
from tests.factories import make_eval_run
from tests.fakes.openai_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [{"input": "What is 2+2?", "expected_output": "4"}, {"input": "Capital of France?", "expected_output": "Paris"}]


def verdict(score: int) -> Reply:
    return Reply(text=json.dumps({"accuracy_score": score, "accuracy_reason": f"scored {score}"}))


def test_json_and_csv_uploads_give_the_same_cases() -> None:
    assert dataset_cases_parse(content=json.dumps(CASES).encode(), filename="cases.json") == CASES
    assert dataset_cases_parse(content=json.dumps({"cases": CASES})) == CASES
    csv_text = "input,expected_output\nWhat is 2+2?,4\n\"Capital of France?\",Paris\n"
    assert dataset_cases_parse(content=("\ufeff" + csv_text).encode(), filename="cases.csv") == CASES


@pytest.mark.parametrize(("content", "message"), [
    ("[{]", "not valid JSON"), ('{"rows": []}', "a list of"), ("[]", "no cases"), ('[{"expected_output": "4"}]', "Case 1 has no input"),
    ("question,answer\na,b\n", "header row"),
])
def test_bad_uploads_say_what_is_wrong(content, message) -> None:
    with pytest.raises(EvalInvalid, match=message):
        dataset_cases_parse(content=content)


def _finished(batch_id: str) -> EvalBatch | None:
    batch = EvalBatch.objects.for_user("alice").get(pk=batch_id)
    return batch if batch.status in ("completed", "failed") else None


def test_a_batch_scores_every_case_and_aggregates(worker, judge) -> None:
    dataset = dataset_create(owner_id="alice", name="basics", cases=CASES)
    judge.push(verdict(9), verdict(3))
    batch = batch_create(owner_id="alice", dataset_id=dataset.pk, eval_type="accuracy", component_kind="agent", component_id="assistant", options={"threshold": 7})
    done = wait_for(lambda: _finished(batch.pk), timeout=60)
    assert (done.status, done.aggregate_score, done.cases_passed, done.cases_total, done.progress) == ("completed", 6.0, 1, 2, {"done": 2, "total": 2})
    runs = list(EvalRun.objects.for_user("alice").filter(batch_id=batch.pk).order_by("created_at"))
    assert [(run.name, run.eval_input["input"], run.score, run.status) for run in runs] == [
        ("basics #1", "What is 2+2?", 9.0, "completed"), ("basics #2", "Capital of France?", 3.0, "completed"),
    ]


def test_a_case_the_judge_cannot_score_is_failed_and_the_batch_goes_on(worker, judge) -> None:
    dataset = dataset_create(owner_id="alice", name="basics", cases=CASES)
    judge.push(Reply(text="no idea"), verdict(8))
    batch = batch_create(owner_id="alice", dataset_id=dataset.pk, eval_type="accuracy", component_kind="agent", component_id="assistant")
    done = wait_for(lambda: _finished(batch.pk), timeout=60)
    assert (done.status, done.aggregate_score, done.cases_passed) == ("completed", 8.0, 1)
    statuses = sorted(EvalRun.objects.for_user("alice").filter(batch_id=batch.pk).values_list("status", flat=True))
    assert statuses == ["completed", "failed"]


def test_another_users_dataset_cannot_be_run() -> None:
    dataset = dataset_create(owner_id="bob", name="bobs", cases=CASES)
    with pytest.raises(LookupError):
        batch_create(owner_id="alice", dataset_id=dataset.pk, eval_type="accuracy", component_kind="agent", component_id="assistant")


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def test_a_dataset_uploaded_in_the_admin_runs_as_a_batch_with_its_aggregate_shown(operator_client, worker, judge) -> None:
    upload = SimpleUploadedFile("cases.csv", b"input,expected_output\nWhat is 2+2?,4\nCapital of France?,Paris\n", content_type="text/csv")
    response = operator_client.post(reverse("admin:evals_evaldataset_add"), {"name": "basics", "description": "", "owner": "alice", "upload": upload})
    assert response.status_code == 302, response.content.decode()[:2000]
    dataset = EvalDataset.objects.for_user("alice").get()
    assert dataset.cases == CASES
    page = operator_client.get(reverse("admin:evals_evaldataset_change", args=[dataset.pk])).content.decode()
    assert "Capital of France?" in page and f"?dataset={dataset.pk}" in page

    judge.push(verdict(10), verdict(6))
    response = operator_client.post(reverse("admin:evals_evalbatch_add"), {
        "dataset": dataset.pk, "kind": "accuracy", "component": "agent:assistant", "criteria": "", "scoring_strategy": "binary", "threshold": 7,
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    batch = EvalBatch.objects.for_user("alice").get()
    wait_for(lambda: _finished(batch.pk), timeout=60)
    page = operator_client.get(reverse("admin:evals_evalbatch_change", args=[batch.pk])).content.decode()
    assert "8.0" in page and "1 of 2" in page and "basics #2" in page


def test_a_bad_upload_is_a_form_error(operator_client) -> None:
    upload = SimpleUploadedFile("cases.json", b"[{]", content_type="application/json")
    response = operator_client.post(reverse("admin:evals_evaldataset_add"), {"name": "broken", "owner": "alice", "upload": upload})
    assert response.status_code == 200 and "not valid JSON" in response.content.decode()
    assert not EvalDataset.all_users.exists()


def test_the_eval_runs_list_shows_status_score_error_and_trends(operator_client) -> None:
    make_eval_run("alice", run_id="e1", eval_type="accuracy", score=4.0)
    make_eval_run("alice", run_id="e2", eval_type="accuracy", score=8.0)
    make_eval_run("bob", run_id="e3", eval_type="accuracy", status="failed", error="The judge model failed: 401", score=None)
    page = operator_client.get(reverse("admin:evals_evalrun_changelist")).content.decode()
    assert "Score trends" in page and "4.0 → 8.0" in page and "6.0" in page
    assert "The judge model failed: 401" in page
    assert operator_client.get(reverse("admin:evals_evalrun_change", args=["e3"])).status_code == 200
