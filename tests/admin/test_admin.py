"""The operator sees every user's rows in the admin, with filters, search and readable JSON."""
from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.urls import reverse

from jobs.models import CancelIntent
from core.tenancy import owned_models
from sessions.models import Run, RunEvent, Session
from sessions.services import run_events_append
from tests.factories import OWNED_FACTORIES, make_run, make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("op", password="pw-for-tests")
    client.force_login(user)
    return client


def changelist(model: type) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


# Owned tables the product keeps itself, deliberately not in the console (core/admin.py, agents/admin.py).
NOT_IN_CONSOLE = {CancelIntent}


def console_models() -> list[type]:
    return sorted((model for model in owned_models() if model not in NOT_IN_CONSOLE), key=lambda m: m.__name__)


def test_every_owned_model_is_in_the_admin() -> None:
    assert set(console_models()) <= set(admin.site._registry)


@pytest.mark.parametrize("model", console_models(), ids=lambda m: m.__name__)
def test_changelist_shows_every_users_rows_and_filters_by_user(operator_client, model) -> None:
    alice = OWNED_FACTORIES[model]("alice")
    bob = OWNED_FACTORIES[model]("bob")
    page = operator_client.get(changelist(model))
    assert page.status_code == 200
    pks = {obj.pk for obj in page.context["cl"].result_list}
    assert {alice.pk, bob.pk} <= pks

    filtered = operator_client.get(changelist(model), {"user_id": "bob"})
    assert filtered.status_code == 200
    assert {obj.pk for obj in filtered.context["cl"].result_list} == {bob.pk}

    searched = operator_client.get(changelist(model), {"q": "alice"})
    assert searched.status_code == 200

    change = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[alice.pk])
    assert operator_client.get(change).status_code == 200


def test_run_page_shows_readable_json_and_links_session_and_events(operator_client) -> None:
    session = make_session("alice", session_id="s-admin")
    run = make_run("alice", session=session, run_data={"content": "Hello <b>there</b>", "status": "COMPLETED"})
    run_events_append(run=run, events=[{"event": "RunStarted"}, {"event": "RunCompleted"}])

    page = operator_client.get(reverse("admin:agno_sessions_run_change", args=[run.pk])).content.decode()
    assert '<pre class="agno-json">' in page
    assert "&quot;content&quot;: &quot;Hello &lt;b&gt;there&lt;/b&gt;&quot;" in page  # escaped, indented JSON
    assert reverse("admin:agno_sessions_session_change", args=[session.pk]) in page
    assert f"{changelist(RunEvent)}?run__run_id__exact={run.pk}" in page

    session_page = operator_client.get(reverse("admin:agno_sessions_session_change", args=[session.pk])).content.decode()
    assert f"{changelist(Run)}?session__session_id__exact={session.pk}" in session_page

    runs = operator_client.get(changelist(Run), {"session__session_id__exact": session.pk})
    assert [obj.pk for obj in runs.context["cl"].result_list] == [run.pk]
    events = operator_client.get(changelist(RunEvent), {"run__run_id__exact": run.pk})
    assert sorted(obj.event for obj in events.context["cl"].result_list) == ["RunCompleted", "RunStarted"]


def test_filters_by_status_type_and_date(operator_client) -> None:
    completed = make_run("alice", status="COMPLETED")
    make_run("alice", status="ERROR")
    page = operator_client.get(changelist(Run), {"status__exact": "COMPLETED", "run_type__exact": "agent", "created_at__gte": "2000-01-01 00:00:00+00:00"})
    assert [obj.pk for obj in page.context["cl"].result_list] == [completed.pk]
    assert operator_client.get(changelist(Session), {"session_type__exact": "team"}).context["cl"].result_count == 0


def test_memory_can_be_edited_in_the_admin(operator_client) -> None:
    from sessions.models import UserMemory

    memory = OWNED_FACTORIES[UserMemory]("alice")
    url = reverse("admin:agno_sessions_usermemory_change", args=[memory.pk])
    response = operator_client.post(url, {"user_id": "alice", "memory": "Alice likes tea", "topics": '["drinks"]', "input": "", "agent_id": "", "team_id": ""})
    assert response.status_code == 302
    memory.refresh_from_db()
    assert (memory.memory, memory.topics, memory.topics_key) == ("Alice likes tea", ["drinks"], ",drinks,")


def test_bootstrap_creates_one_operator_with_a_random_password(capsys, django_user_model) -> None:
    call_command("bootstrap")
    first = capsys.readouterr().out
    call_command("bootstrap")
    second = capsys.readouterr().out
    assert "password:" in first and "password:" not in second
    password = first.split("password:")[1].split()[0]
    operator = django_user_model.objects.get(username="operator")
    assert operator.is_superuser and operator.check_password(password) and len(password) >= 16
