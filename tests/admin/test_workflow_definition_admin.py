"""Workflows composed in the admin, as teams are: a draft's step graph edited as JSON with its
building blocks listed and a preview of the graph, bad graphs refused as form errors (never a
500), published by an action, versions listed; the console's workflow page shows the live one."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from agents.models import AgentDefinition, WorkflowDefinition
from agents.registry import workflow_get
from agents.services.definitions import draft_for, workflow_definition_create
from tests.admin.test_team_admin import _draft_prefix, _form_data
from tests.admin.test_workflow_admin import text

pytestmark = pytest.mark.django_db

STEPS = [
    {"type": "Parallel", "name": "both", "steps": [
        {"type": "Step", "name": "ask", "agent_id": "assistant"}, {"type": "Step", "name": "team", "team_id": "research-team"},
    ]},
    {"type": "Step", "name": "loud", "executor_ref": "shout", "human_review": {"requires_confirmation": True, "confirmation_message": "Shout it?"}},
]


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


@pytest.fixture
def flow() -> WorkflowDefinition:
    return workflow_definition_create(workflow_id="loud-flow", name="Loud Flow", steps=STEPS)


def change_url(definition: WorkflowDefinition) -> str:
    return reverse("admin:agents_workflowdefinition_change", args=[definition.pk])


def post_draft(operator_client, url: str, steps, **fields: str):
    page = operator_client.get(url)
    prefix = _draft_prefix(page)
    data = _form_data(page, **{"workflow_id": "new-flow", "name": "New Flow", "description": "", "is_active": "on", **fields})
    data[f"{prefix}-0-steps"] = steps if isinstance(steps, str) else json.dumps(steps)
    data[f"{prefix}-0-notes"] = ""
    return operator_client.post(url, data)


def test_the_changelist_shows_the_live_version_and_the_draft(operator_client, flow) -> None:
    page = operator_client.get(reverse("admin:agents_workflowdefinition_changelist")).content.decode()
    assert "v1 · 2 steps: Parallel both, Step loud" in page and "v2" in page


def test_the_add_page_lists_the_building_blocks(operator_client) -> None:
    page = operator_client.get(reverse("admin:agents_workflowdefinition_add"))
    assert page.status_code == 200
    body = page.content.decode()
    assert "<p>agent_id: <code>assistant</code>, <code>hitl-agent</code>, <code>openai-agent</code></p>" in body
    assert "<p>team_id: <code>research-team</code>, <code>hitl-team</code></p>" in body
    assert "chat/js/workflow_composer.js" in body and 'data-agents="[&quot;assistant&quot;, &quot;hitl-agent&quot;, &quot;openai-agent&quot;]"' in body
    flat = text(body)
    assert "shout (A function step: the previous step's answer, in capitals.)" in flat and "long_enough (A Loop's end condition" in flat


def test_a_new_workflow_is_saved_as_a_draft_not_yet_served(operator_client) -> None:
    response = post_draft(operator_client, reverse("admin:agents_workflowdefinition_add"), STEPS)
    assert response.status_code == 302, response.context and [f.errors for f in response.context["inline_admin_formsets"][0].formset.forms]
    (draft,) = WorkflowDefinition.objects.get(workflow_id="new-flow").versions.all()
    assert (draft.version, draft.stage, draft.steps) == (1, "draft", STEPS)
    assert workflow_get("new-flow") is None  # not live until published


@pytest.mark.parametrize(("steps", "message"), [
    ("[{not json", "Enter a valid JSON."),
    ("[]", "The steps are a non-empty JSON list of step objects."),
    ([{"type": "Step", "agent_id": "ghost"}], "steps[0].agent_id: No live agent &#x27;ghost&#x27;."),
    ([{"type": "Parallel", "human_review": {"requires_confirmation": True}, "steps": [{"type": "Step", "executor_ref": "shout"}]}],
     "steps[0]: Parallel takes no &#x27;human_review&#x27;"),
    ([{"type": "Step", "executor_ref": "nope", "human_review": {"on_reject": "shrug"}}], "steps[0].executor_ref: No registered function &#x27;nope&#x27;."),
])
def test_a_bad_graph_is_a_form_error_not_a_500(operator_client, steps, message) -> None:
    response = post_draft(operator_client, reverse("admin:agents_workflowdefinition_add"), steps)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not WorkflowDefinition.objects.filter(workflow_id="new-flow").exists()


def test_the_change_page_previews_the_draft_and_lists_the_published_versions(operator_client, flow) -> None:
    draft = draft_for(flow)
    draft.steps = [{"type": "Loop", "name": "grow", "end_condition": "long_enough", "steps": [{"type": "Step", "name": "more", "executor_ref": "exclaim"}]}]
    draft.save(update_fields=["steps"])
    page = operator_client.get(change_url(flow))
    assert page.status_code == 200
    body = page.content.decode()
    draft_part, published_part = body.split("Published versions (the newest is live)")
    assert "Loop grow · end_condition long_enough" in text(draft_part) and "Step more · function exclaim" in text(draft_part)
    assert "Parallel both" in text(published_part) and "Step loud · function shout review: confirmation" in text(published_part)
    assert "Served to users" in body and "Yes: v1." in body


def test_publishing_from_the_admin_and_a_draft_that_cannot_be(operator_client, flow) -> None:
    changelist = reverse("admin:agents_workflowdefinition_changelist")
    draft = draft_for(flow)
    draft.steps = [{"type": "Step", "name": "quiet", "executor_ref": "exclaim"}]
    draft.save(update_fields=["steps"])
    operator_client.post(changelist, {"action": "publish_drafts", "_selected_action": [flow.pk]})
    assert (workflow_get("loud-flow").version, workflow_get("loud-flow").build(None).steps[0].name) == (2, "quiet")

    draft = draft_for(flow)
    draft.steps = [{"type": "Step", "agent_id": "ghost"}]
    draft.save(update_fields=["steps"])
    page = operator_client.post(changelist, {"action": "publish_drafts", "_selected_action": [flow.pk]}, follow=True).content.decode()
    assert "Loud-flow: not published: steps[0].agent_id: No live agent &#x27;ghost&#x27;." in page
    assert workflow_get("loud-flow").version == 2


def test_a_workflow_whose_agent_has_gone_says_so(operator_client) -> None:
    AgentDefinition.objects.create(agent_id="temp", name="Temp").versions.create(version=1, stage="published")
    flow = workflow_definition_create(workflow_id="temp-flow", name="Temp Flow", steps=[{"type": "Step", "name": "t", "agent_id": "temp"}])
    AgentDefinition.objects.filter(agent_id="temp").update(is_active=False)
    body = text(operator_client.get(change_url(flow)).content.decode())
    assert "No: v1 no longer builds (steps[0].agent_id: No live agent 'temp'.). Publish a version that does." in body


def test_the_console_lists_the_live_admin_workflow_after_the_code_ones(operator_client, flow) -> None:
    page = operator_client.get(reverse("console-workflows"))
    assert [tree.workflow_id for tree in page.context["workflows"]] == ["draft-flow", "review-flow", "loud-flow"]
    assert "Step loud · function shout review: confirmation" in text(page.content.decode())


# ---- bounds (issue 31, item 12): a form error, never a RecursionError's 500 -----------------------

def _nested(depth: int) -> list:
    inner: dict = {"type": "Step", "name": "leaf", "executor_ref": "shout"}
    for level in range(depth):
        inner = {"type": "Steps", "name": f"level{level}", "steps": [inner]}
    return [inner]


@pytest.mark.parametrize(("steps", "message"), [
    (_nested(3000), "Steps nest at most 10 deep"),
    (json.dumps(_nested(200)), "Steps nest at most 10 deep"),
    ([{"type": "Parallel", "name": "wide", "steps": [{"type": "Step", "name": f"b{n}", "executor_ref": "shout"} for n in range(5000)]}],
     "steps[0].steps: At most 50 steps in a list (5000 here)."),
    ([{"type": "Loop", "name": "l", "max_iterations": 10**12, "steps": [{"type": "Step", "name": "s", "executor_ref": "shout"}]}],
     "steps[0].max_iterations: A whole number from 1 to 100."),
    ([{"type": "Step", "name": "s", "executor_ref": "shout", "max_retries": 10**12}], "steps[0].max_retries: A whole number from 0 to 10."),
    ([{"type": "Step", "name": "s" * 300, "executor_ref": "shout"}], "steps[0].name: At most 255 characters (300 here)."),
])
def test_a_graph_past_its_bounds_is_a_form_error(operator_client, steps, message) -> None:
    payload = steps if isinstance(steps, str) else _deep_json(steps)
    response = post_draft(operator_client, reverse("admin:agents_workflowdefinition_add"), payload)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not WorkflowDefinition.objects.filter(workflow_id="new-flow").exists()


def _deep_json(steps) -> str:
    """``json.dumps`` of a graph nested past the encoder's recursion limit, written by hand."""
    try:
        return json.dumps(steps)
    except RecursionError:
        depth, leaf = 0, steps[0]
        while leaf.get("type") == "Steps":
            depth, leaf = depth + 1, leaf["steps"][0]
        return '[{"type": "Steps", "steps": [' * depth + json.dumps(leaf) + "]}" * depth + "]"


def test_a_graph_saved_deeper_than_the_bound_still_previews(operator_client) -> None:
    flow = workflow_definition_create(workflow_id="deep-flow", name="Deep Flow", steps=STEPS)
    draft = draft_for(flow)
    draft.steps = _nested(400)  # saved before the bounds (no form checked it)
    draft.save(update_fields=["steps"])
    page = operator_client.get(change_url(flow))
    assert page.status_code == 200
    assert "Steps level399" in text(page.content.decode())
