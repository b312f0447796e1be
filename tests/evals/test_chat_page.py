"""My evals in the chat: a user uploads an eval dataset (JSON or CSV), runs it as a batch against
an agent, and reads the aggregate score; another user sees none of it and cannot run it."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from evals.models import EvalBatch, EvalDataset
from tests.agents.conftest import wait_for
from tests.fakes.openai_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [{"input": "What is 2+2?", "expected_output": "4"}, {"input": "Capital of France?", "expected_output": "Paris"}]


def signed_in(client, username: str):
    get_user_model().objects.create_user(username=username, password="pw-for-tests-123")
    client.login(username=username, password="pw-for-tests-123")
    return client


def upload(client, name: str, content: bytes, filename: str):
    return client.post("/chat/evals/", {"action": "upload", "name": name, "dataset": SimpleUploadedFile(filename, content)}, follow=True)


def test_a_user_uploads_a_dataset_runs_it_and_reads_the_score(client, worker, judge):
    signed_in(client, "alice")
    page = upload(client, "basics", json.dumps(CASES).encode(), "cases.json")
    assert "Uploaded “basics”: 2 case(s)." in page.content.decode()
    dataset = EvalDataset.objects.for_user("alice").get()
    assert dataset.cases == CASES
    judge.push(Reply(text=json.dumps({"accuracy_score": 8, "accuracy_reason": "right"})), Reply(text=json.dumps({"accuracy_score": 4, "accuracy_reason": "wrong"})))
    page = client.post("/chat/evals/", {"action": "batch", "dataset_id": dataset.pk, "eval_type": "accuracy", "target": "agent:assistant"}, follow=True)
    assert "Running “basics” as accuracy against assistant: 2 case(s)." in page.content.decode()
    batch = wait_for(lambda: EvalBatch.objects.for_user("alice").filter(status__in=("completed", "failed")).first(), timeout=60)
    assert (batch.status, batch.aggregate_score, batch.cases_total) == ("completed", 6.0, 2)
    html = client.get("/chat/evals/").content.decode()
    assert "basics #1" in html
    # The numbers say their scale: a score out of 10, and what passing a case means.
    assert "6.00 / 10" in html and "1 of 2 <span class=\"muted small\">(at 7 or more)</span>" in html and "8.00 / 10" in html
    assert "Scores are out of 10" in html


def test_a_csv_dataset_and_bad_uploads_say_what_is_wrong(client):
    signed_in(client, "alice")
    assert "2 case(s)" in upload(client, "csv", b"input,expected_output\nWhat is 2+2?,4\nCapital of France?,Paris\n", "cases.csv").content.decode()
    bad = upload(client, "broken", b"question,answer\na,b\n", "broken.csv").content.decode()
    assert "needs a header row with the columns input and expected_output" in bad
    assert "not valid JSON" in upload(client, "broken", b"[{", "broken.json").content.decode()
    assert "Choose a JSON or CSV file" in client.post("/chat/evals/", {"action": "upload"}, follow=True).content.decode()
    assert EvalDataset.objects.for_user("alice").count() == 1
    refused = client.post("/chat/evals/", {"action": "batch", "dataset_id": EvalDataset.objects.for_user("alice").get().pk,
                                           "eval_type": "reliability", "target": "agent:assistant"}, follow=True).content.decode()
    assert "A dataset runs as accuracy or agent_as_judge evals" in refused
    missing = client.post("/chat/evals/", {"action": "batch", "dataset_id": EvalDataset.objects.for_user("alice").get().pk,
                                           "eval_type": "accuracy", "target": "agent:nobody"}, follow=True).content.decode()
    assert "Agent with id &#x27;nobody&#x27; not found" in missing or "Agent with id 'nobody' not found" in missing
    assert not EvalBatch.objects.for_user("alice").exists()


def test_another_user_sees_nothing_and_cannot_run_it(client):
    signed_in(client, "alice")
    upload(client, "alice's secret set", json.dumps(CASES).encode(), "cases.json")
    dataset = EvalDataset.objects.for_user("alice").get()
    client.logout()
    signed_in(client, "bob")
    html = client.get("/chat/evals/").content.decode()
    assert "alice&#x27;s secret set" not in html and "alice's secret set" not in html and "No dataset yet." in html
    refused = client.post("/chat/evals/", {"action": "batch", "dataset_id": dataset.pk, "eval_type": "accuracy", "target": "agent:assistant"}, follow=True)
    assert "That dataset is not yours, or it was deleted." in refused.content.decode()
    assert not EvalBatch.all_users.exists()


def test_the_page_needs_a_login(client):
    response = client.get("/chat/evals/")
    assert response.status_code == 302 and "/chat/login" in response["Location"]
