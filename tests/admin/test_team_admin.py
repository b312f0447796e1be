"""Teams in the admin, as agents: a draft edited with members chosen from the live agents and
teams, published by an action; and a team run's page lists its member runs."""
from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import AgentDefinition, TeamDefinition
from agents.registry import team_get
from agents.services.definitions import definition_create, draft_for, team_definition_create
from sessions.models import Run
from tests.factories import make_run, make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


@pytest.fixture
def desk() -> TeamDefinition:
    definition_create(agent_id="researcher", name="Researcher", model="offline:demo")
    return team_definition_create(team_id="desk", name="Desk", members=["researcher", "assistant"])


def _form_data(page, **fields: str) -> dict[str, str]:
    """What the browser posts: the page's management forms, then ``fields``."""
    data: dict[str, str] = {}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({f"{management.prefix}-{name}": str(value) for name, value in management.initial.items()})
        for form in formset.formset.initial_forms:  # each stored version's hidden id and parent
            data.update({field.html_name: str(field.value()) for field in form.hidden_fields()})
    return {**data, **fields}


def _draft_prefix(page) -> str:
    return next(f.formset.prefix for f in page.context["inline_admin_formsets"] if f.formset.max_num == 1)


def test_the_changelist_shows_the_live_version_with_its_members(operator_client, desk) -> None:
    page = operator_client.get(reverse("admin:agents_teamdefinition_changelist")).content.decode()
    assert "v1 · coordinate · researcher, assistant" in page and "v2" in page  # live v1, draft v2


def test_a_new_team_is_saved_with_its_draft_and_members_from_the_live_ones(operator_client, desk) -> None:
    url = reverse("admin:agents_teamdefinition_add")
    page = operator_client.get(url)
    members = page.context["inline_admin_formsets"][0].formset.forms[0].fields["members"]
    assert [choice for choice, _ in members.choices] == ["assistant", "hitl-agent", "openai-agent", "researcher", "research-team", "hitl-team", "desk"]
    prefix = _draft_prefix(page)
    data = _form_data(page, team_id="floor", name="Floor", description="", is_active="on", **{
        f"{prefix}-0-mode": "route", f"{prefix}-0-model": "offline:demo", f"{prefix}-0-instructions": "Route well.",
        f"{prefix}-0-max_iterations": "10", f"{prefix}-0-num_history_runs": "3", f"{prefix}-0-notes": "",
    })
    data[f"{prefix}-0-members"] = ["researcher", "desk"]  # in the order the page lists them
    response = operator_client.post(url, data)
    assert response.status_code == 302, response.context and [f.errors for f in response.context["inline_admin_formsets"][0].formset.forms]
    (draft,) = TeamDefinition.objects.get(team_id="floor").versions.all()
    assert (draft.version, draft.stage, draft.mode, draft.members) == (1, "draft", "route", ["researcher", "desk"])
    assert team_get("floor") is None  # not live until published


def test_the_draft_form_refuses_a_cycle(operator_client, desk) -> None:
    team_definition_create(team_id="floor", name="Floor", members=["desk"])
    url = reverse("admin:agents_teamdefinition_change", args=[desk.pk])
    page = operator_client.get(url)
    prefix = _draft_prefix(page)
    data = _form_data(page, team_id="desk", name="Desk", description="", is_active="on", **{
        f"{prefix}-0-mode": "coordinate",
        f"{prefix}-0-model": "offline:demo", f"{prefix}-0-max_iterations": "10", f"{prefix}-0-num_history_runs": "3",
    })
    data[f"{prefix}-0-members"] = ["researcher", "floor"]
    response = operator_client.post(url, data)
    assert response.status_code == 200
    assert "A team cannot contain itself: desk → floor → desk" in response.content.decode()


def test_the_change_page_shows_the_live_members_and_one_that_has_gone(operator_client, desk) -> None:
    url = reverse("admin:agents_teamdefinition_change", args=[desk.pk])
    page = operator_client.get(url)
    body = page.content.decode()
    assert page.status_code == 200 and "Draft (not live until published)" in body
    assert "researcher (agent), assistant (agent)" in body
    AgentDefinition.objects.filter(agent_id="researcher").update(is_active=False)
    body = operator_client.get(url).content.decode()
    assert "researcher (GONE)" in body and "Unavailable to users until a version without researcher is published" in body


def test_publishing_from_the_admin_and_a_draft_that_cannot_be(operator_client, desk) -> None:
    draft = draft_for(desk)
    draft.instructions = "New rules."
    draft.save(update_fields=["instructions"])
    changelist = reverse("admin:agents_teamdefinition_changelist")
    operator_client.post(changelist, {"action": "publish_drafts", "_selected_action": [desk.pk]})
    assert (team_get("desk").version, team_get("desk").build(None).instructions) == (2, "New rules.")

    draft = draft_for(desk)
    draft.members = []
    draft.save(update_fields=["members"])
    page = operator_client.post(changelist, {"action": "publish_drafts", "_selected_action": [desk.pk]}, follow=True).content.decode()
    assert "Desk: not published: A team needs at least one member.<" in page  # (the admin capitalises messages)
    assert team_get("desk").version == 2


def test_a_team_run_shows_its_member_runs_read_only(operator_client) -> None:
    session = make_session("alice", session_type="team", component_id="research-team")
    team_run = make_run("alice", session=session, run_type="team", status="COMPLETED")
    member = make_run("alice", session=session, component_id="researcher", parent_run_id=team_run.pk, status="COMPLETED")
    Run.all_users.filter(pk=member.pk).update(total_tokens=42)
    page = operator_client.get(reverse("admin:agno_sessions_run_change", args=[team_run.pk])).content.decode()
    assert "Member runs" in page and 'class="member-runs"' in page
    member_url = reverse("admin:agno_sessions_run_change", args=[member.pk])
    assert f'<a href="{member_url}">{member.pk}</a></td><td>researcher</td><td>agent</td><td>Completed</td><td>42</td>' in page
    member_page = operator_client.get(member_url).content.decode()
    assert "Member runs" not in member_page  # an agent's run has none
