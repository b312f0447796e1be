"""Workflows in the operator console: the code workflows as step trees, a run's step timeline
with its child runs, and a paused run resumed (through the worker) or cancelled from the admin."""
from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from jobs.models import Job, JobStatus
from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import submit_run
from core.auth import Principal
from sessions.models import Run
from tests.agents import conftest as agents_fixtures
from tests.agents.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

worker = agents_fixtures.worker  # the embedded worker of this process
ALICE = Principal(user_id="alice", isolated=True, via="session")


@pytest.fixture
def operator(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def run_workflow(workflow_id: str, message: str) -> Run:
    done = submit_run(principal=ALICE, component_id=workflow_id, kind="workflow", request=RunRequest(message=message, stream=False))
    return Run.objects.for_user("alice").get(pk=done.output["run_id"])


def change_page(run: Run) -> str:
    return reverse("admin:agno_sessions_run_change", args=[run.pk])


def review_page(run: Run) -> str:
    return reverse("admin:agno_sessions_run_review", args=[run.pk])


def text(markup: str) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", markup).split()))


def test_the_workflows_page_lists_each_workflow_with_its_step_tree(operator) -> None:
    assert reverse("console-workflows") in operator.get(reverse("admin:index")).content.decode()
    page = operator.get(reverse("console-workflows"))
    assert page.status_code == 200
    [draft, review] = page.context["workflows"]
    assert (draft.workflow_id, review.workflow_id) == ("draft-flow", "review-flow")
    [both, shout] = draft.steps
    assert (both.step_type, both.name, [(s.name, s.executor) for s in both.children]) == (
        "Parallel", "both", [("draft", "agent drafter"), ("check", "agent checker")],
    )
    assert (shout.step_type, shout.executor, review.steps[0].review) == ("Step", "function shout", ("confirmation",))
    html = text(page.content.decode())
    assert "Parallel both" in html and "Step draft · agent drafter" in html and "review: confirmation" in html
    mine = run_workflow("draft-flow", "listed")
    run_workflow("review-flow", "not listed")
    runs = operator.get(reverse("admin:agno_sessions_run_changelist") + "?run_type__exact=workflow&component_id=draft-flow")
    assert [run.pk for run in runs.context["cl"].result_list] == [mine.pk]


def test_a_finished_run_shows_its_timeline_with_both_branches_and_their_child_runs(operator) -> None:
    run = run_workflow("draft-flow", "hello admin")
    children = {child.component_id: child for child in Run.objects.for_user("alice").filter(parent_run_id=run.pk)}
    page = operator.get(change_page(run)).content.decode()
    timeline = page[page.index('class="step-timeline"'):]
    assert 'class="step-timeline parallel-branches"' in timeline  # the branches, side by side
    for component_id in ("drafter", "checker"):
        assert change_page(children[component_id]) in timeline
        assert f"agent run {component_id} (Completed)" in text(timeline)
    flat = text(timeline)
    assert flat.index("Parallel both") < flat.index("Step draft") < flat.index("Step check") < flat.index("Step shout")
    assert "function shout" in flat and "HELLO ADMIN" in flat and "completed" in flat
    assert re.search(r"Step draft · completed · \d+ ms · agent Drafter", flat)  # an agent step took its run's time
    assert "<details" in timeline  # the long combined output opens on a click
    assert "step timeline" not in operator.get(change_page(children["drafter"])).content.decode()  # an agent run has none


def test_a_paused_run_is_confirmed_from_the_admin_and_completes_in_the_background(operator, worker) -> None:
    run = run_workflow("review-flow", "ship from admin")
    assert run.status == "PAUSED"
    paused_page = operator.get(change_page(run)).content.decode()
    assert review_page(run) in paused_page
    assert "Step publish · paused for review" in text(paused_page) and "Publish it?" in text(paused_page)
    page = operator.get(review_page(run)).content.decode()
    assert "Publish it?" in page and 'value="confirm"' in page and 'value="reject"' in page
    response = operator.post(review_page(run), {"decision": "confirm"})
    assert response.status_code == 302 and response.url == change_page(run)
    worker()
    done = wait_for(lambda: Run.objects.for_user("alice").filter(pk=run.pk, status="COMPLETED").first())
    assert done.content == "SHIP FROM ADMIN"
    assert Job.objects.for_user("alice").get(pk=run.pk).status == JobStatus.COMPLETED  # it ran as a background job
    assert "SHIP FROM ADMIN" in text(operator.get(change_page(done)).content.decode())


def test_an_unknown_decision_is_refused_and_the_run_stays_paused(operator) -> None:
    run = run_workflow("review-flow", "not yet")
    response = operator.post(review_page(run), {"decision": "maybe"}, follow=True)
    assert "Choose one of: confirm, reject." in response.content.decode()
    run.refresh_from_db()
    assert run.status == "PAUSED"


def test_a_paused_run_is_cancelled_from_the_admin(operator) -> None:
    run = run_workflow("review-flow", "never mind")
    response = operator.post(review_page(run), {"action": "cancel"})
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.content) == ("CANCELLED", "cancelled by an operator")
    page = operator.get(review_page(run)).content.decode()
    assert 'id="workflow-cancel-form"' not in page and 'name="decision"' not in page


@pytest.fixture
def console_workflows(settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.admin.workflows"]


def test_a_loops_iterations_are_numbered_in_the_timeline(operator, console_workflows) -> None:
    run = run_workflow("loop-flow", "go")
    flat = text(operator.get(change_page(run)).content.decode())
    assert flat.index("Loop twice") < flat.index("iteration 1 Step again") < flat.index("iteration 2 Step again")


def test_a_user_input_review_takes_the_operators_values(operator, worker, console_workflows) -> None:
    run = run_workflow("intake-flow", "print it")
    page = operator.get(review_page(run)).content.decode()
    assert "Who is it for?" in page and 'name="input-audience"' in page and 'name="input-copies"' in page
    refused = operator.post(review_page(run), {"decision": "confirm", "input-audience": "ops", "input-copies": "many"}, follow=True)
    assert "Field 'copies' expects int: 'many'" in text(refused.content.decode())
    operator.post(review_page(run), {"decision": "confirm", "input-audience": "ops", "input-copies": "3"})
    worker()
    done = wait_for(lambda: Run.objects.for_user("alice").filter(pk=run.pk, status="COMPLETED").first())
    assert done.content == "audience='ops', copies=3"


def test_a_rejected_review_skips_the_step(operator, worker) -> None:
    run = run_workflow("review-flow", "do not ship")
    operator.post(review_page(run), {"decision": "reject", "feedback": "not today"})
    worker()
    done = wait_for(lambda: Run.objects.for_user("alice").filter(pk=run.pk).exclude(status__in=("PAUSED", "PENDING", "RUNNING")).first())
    assert done.status == "COMPLETED" and "SHIP" not in (done.content or "")  # on_reject="skip"


def test_resuming_needs_change_permission_on_runs(client, django_user_model) -> None:
    viewer = django_user_model.objects.create_user("viewer", password="pw-for-tests", is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename="view_run"))
    client.force_login(viewer)
    run = run_workflow("review-flow", "not yours")
    assert client.post(review_page(run), {"decision": "confirm"}).status_code == 403
    run.refresh_from_db()
    assert run.status == "PAUSED"
