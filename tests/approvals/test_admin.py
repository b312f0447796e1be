"""The approvals queue in the Django admin: what waits first, decided from its change page."""
from __future__ import annotations

import pytest
from django.urls import reverse

from agents.pipeline.runs import RunRequest
from agents.pipeline.submit import submit_run
from approvals.models import Approval
from sessions.models import Run
from tests.agents.conftest import wait_for
from tests.approvals.conftest import browser_user
from tests.factories import make_approval

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = reverse("admin:approvals_approval_changelist")


@pytest.fixture
def operator(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def change_page(approval: Approval) -> str:
    return reverse("admin:approvals_approval_change", args=[approval.pk])


def test_the_queue_opens_on_what_is_pending(operator):
    waiting = make_approval("alice")
    done = make_approval("bob", status="approved", resolved_by="op")
    assert [row.pk for row in operator.get(QUEUE).context["cl"].result_list] == [waiting.pk]
    everything = operator.get(QUEUE, {"status": "all"}).context["cl"].result_list
    assert {row.pk for row in everything} == {waiting.pk, done.pk}
    assert [row.pk for row in operator.get(QUEUE, {"status": "approved"}).context["cl"].result_list] == [done.pk]


def test_approving_from_the_change_page_continues_the_run(operator, worker):
    done = submit_run(principal=browser_user("alice"), component_id="approval-agent", request=RunRequest(message='/call wire_funds {"to": "bob", "amount": 7}', stream=False), kind="agent")
    (approval,) = Approval.objects.for_user("alice")
    page = operator.get(change_page(approval))
    assert page.status_code == 200 and 'name="decision"' in page.content.decode()
    response = operator.post(change_page(approval), {"decision": "approved", "note": "checked with bob"})
    assert response.status_code == 302
    approval.refresh_from_db()
    assert (approval.status, approval.resolved_by, approval.resolution_data, approval.resolved_at is not None) == (
        "approved", "op", {"note": "checked with bob"}, True,
    )
    worker()
    run = wait_for(lambda: Run.objects.for_user("alice").filter(pk=done.output["run_id"], status="COMPLETED").first())
    assert run.run_data["tools"][0]["result"] == "wired 7 to bob"
    # Decided: the page says who decided what, and offers no decision any more.
    decided = operator.get(change_page(approval)).content.decode()
    assert 'name="decision"' not in decided and "checked with bob" in decided and "approved" in decided


def test_saving_without_a_decision_changes_nothing(operator):
    approval = make_approval("alice")
    assert operator.post(change_page(approval), {"decision": "", "note": "later"}).status_code == 302
    approval.refresh_from_db()
    assert (approval.status, approval.resolved_by, approval.resolution_data) == ("pending", None, None)


def test_a_decision_on_an_approval_decided_meanwhile_is_refused(operator):
    approval = make_approval("alice")
    page = change_page(approval)
    Approval.objects.for_user("alice").filter(pk=approval.pk).update(status="rejected", resolved_by="someone")
    response = operator.post(page, {"decision": "approved", "note": ""}, follow=True)
    assert "Approval is already &#x27;rejected&#x27; and cannot be resolved" in response.content.decode()
    approval.refresh_from_db()
    assert (approval.status, approval.resolved_by) == ("rejected", "someone")
