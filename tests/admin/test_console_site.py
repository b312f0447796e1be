"""The operator console as an operator meets it (issue 34, item 10): branded, grouped by task,
without the tables the product keeps itself, with plurals that read, a token form that refuses a
token with no scopes and picks the user from a list, and agent lists that do not call a copy of
the live version a draft."""
from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.urls import reverse
from django_celery_beat.models import ClockedSchedule, CrontabSchedule, IntervalSchedule, PeriodicTask, SolarSchedule

from agents.models import AgentDefinition, Stage
from jobs.models import CancelIntent
from agents.services.definitions import definition_create, draft_for, publish_draft
from core.models import AccessToken
from evals.models import EvalBatch

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def _groups(html: str) -> list[tuple[str, list[str]]]:
    """The index's groups, each with the tables listed in it (the app list, not the console's links)."""
    found = []
    for caption, body in re.findall(r'<caption>\s*(?:<a[^>]*>|<span class="section">)([^<]+)</(?:a|span)>\s*</caption>(.*?)</table>', html, re.S):
        found.append((caption.strip(), [name.strip() for name in re.findall(r'<th scope="row" id="[^"]+">\s*<a[^>]*>([^<]+)</a>', body)]))
    return found


def test_the_console_is_branded_as_the_product(operator_client) -> None:
    page = operator_client.get(reverse("admin:index")).content.decode()
    assert "Django administration" not in page and "Django site admin" not in page
    assert "Agno Site · operator console" in page
    assert "<title>Operator console | Agno Site console</title>" in page


def test_the_index_is_grouped_by_the_operators_tasks(operator_client) -> None:
    groups = dict(_groups(operator_client.get(reverse("admin:index")).content.decode()))
    assert list(groups) == ["Runs and jobs", "Agents, teams and workflows", "Knowledge", "Schedules", "Users and access", "Observability"]
    assert groups["Runs and jobs"][:3] == ["Runs", "Sessions", "Jobs"]
    assert groups["Agents, teams and workflows"] == ["Agent definitions", "Team definitions", "Workflow definitions", "Quick prompts", "MCP server tool policies"]
    assert "Periodic tasks" in groups["Schedules"] and "Access tokens" in groups["Users and access"]
    assert "Eval batches" in groups["Observability"]


def test_the_tables_the_product_keeps_are_hidden_or_read_only(operator_client) -> None:
    for model in (ClockedSchedule, CrontabSchedule, IntervalSchedule, SolarSchedule, CancelIntent):
        assert not admin.site.is_registered(model), model
    html = operator_client.get(reverse("admin:index")).content.decode()
    for name in ("Crontabs", "Intervals", "Solar events", "Clocked", "Cancel intents"):
        assert f">{name}<" not in html, name
    assert operator_client.get("/admin/django_celery_beat/crontabschedule/").status_code == 404

    task = PeriodicTask.objects.create(name="nightly", task="scheduler.fire", crontab=CrontabSchedule.objects.create(minute="0", hour="3"))
    change_url = reverse("admin:django_celery_beat_periodictask_change", args=[task.pk])
    assert operator_client.get(change_url).status_code == 200  # to read
    assert operator_client.get(reverse("admin:django_celery_beat_periodictask_add")).status_code == 403
    operator_client.post(change_url, {"name": "renamed", "task": "scheduler.fire", "crontab": task.crontab_id, "enabled": "on"})
    assert PeriodicTask.objects.get(pk=task.pk).name == "nightly"


def test_plurals_read_as_english() -> None:
    assert EvalBatch._meta.verbose_name_plural == "eval batches"


def test_the_token_form_refuses_a_token_with_no_scopes(operator_client, django_user_model) -> None:
    django_user_model.objects.create_user("alice", password="pw-for-tests")
    response = operator_client.post(reverse("admin:core_accesstoken_add"), {"name": "empty", "kind": "personal", "user_id": "alice", "scopes_text": " ", "ttl_days": "30"})
    assert response.status_code == 200  # the form again, with its error
    assert "A token needs at least one scope" in response.content.decode()
    response = operator_client.post(reverse("admin:core_accesstoken_add"), {"name": "bad", "kind": "personal", "user_id": "alice", "scopes_text": "nonsense", "ttl_days": "30"})
    assert response.status_code == 200 and "Invalid scope(s): nonsense" in response.content.decode()
    assert not AccessToken.all_users.exists()


def test_the_token_form_picks_the_user_from_the_accounts(operator_client, django_user_model) -> None:
    django_user_model.objects.create_user("alice", password="pw-for-tests")
    page = operator_client.get(reverse("admin:core_accesstoken_add")).content.decode()
    select = re.search(r'<select name="user_id"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None
    assert re.findall(r'<option value="([^"]*)"', select.group(1)) == ["", "alice", "op"]

    response = operator_client.post(reverse("admin:core_accesstoken_add"), {"name": "ghost", "kind": "personal", "user_id": "nobody", "scopes_text": "agents:read", "ttl_days": "30"})
    assert response.status_code == 200 and not AccessToken.all_users.exists()
    response = operator_client.post(reverse("admin:core_accesstoken_add"), {"name": "mine", "kind": "personal", "user_id": "", "scopes_text": "agents:read", "ttl_days": "30"})
    assert "A personal token acts as a user" in response.content.decode() and not AccessToken.all_users.exists()
    operator_client.post(reverse("admin:core_accesstoken_add"), {"name": "mine", "kind": "personal", "user_id": "alice", "scopes_text": "agents:read", "ttl_days": "30"})
    assert AccessToken.all_users.get().user_id == "alice"


def test_agent_lists_do_not_show_a_draft_identical_to_the_live_version(operator_client) -> None:
    same = definition_create(agent_id="same", name="Same", model="offline:echo")  # published v1, draft v2 a copy of it
    changed = definition_create(agent_id="changed", name="Changed", model="offline:echo")
    draft = draft_for(changed)
    draft.instructions = "Answer in French."
    draft.save()
    unpublished = definition_create(agent_id="new", name="New", model="offline:echo", publish=False)
    assert same.versions.filter(stage=Stage.DRAFT).count() == 1

    page = operator_client.get(reverse("admin:agents_agentdefinition_changelist")).content.decode()
    cells = {agent_id: cell for agent_id, cell in re.findall(r'<a href="/admin/agents/agentdefinition/\d+/change/">([^<]+)</a>.*?<td class="field-draft_version">([^<]*)</td>', page, re.S)}
    assert cells == {"same": "—", "changed": f"draft v{draft.version}", "new": "draft v1"}
    publish_draft(AgentDefinition.objects.get(agent_id="changed"))
    page = operator_client.get(reverse("admin:agents_agentdefinition_changelist")).content.decode()
    assert "draft v" in page and f"draft v{draft.version}" not in page  # only "new" has changes now
    assert unpublished.pk
