"""What an operator reads in the admin (issue 19): runs listed by what they said and how long
they took, read-only pages without Save buttons, an agent form that edits only what an operator
may change, and the site's icon at /favicon.ico."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents.models import AgentDefinition
from jobs.models import Job
from agents.registry import agent_get
from agents.services.definitions import definition_create, publish_draft
from core.admin import preview, seconds
from sessions.models import Run
from tests.factories import make_job, make_run, make_session

pytestmark = pytest.mark.django_db

SAVE_BUTTONS = ('name="_save"', 'name="_continue"', 'name="_addanother"')


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def test_the_runs_list_shows_input_content_status_and_duration_with_a_unit(operator_client) -> None:
    run = make_run("alice", input={"input_content": "What is the weather\nin Paris today?"}, status="COMPLETED")
    Run.all_users.filter(pk=run.pk).update(content="Sunny, 24 °C.", duration=0.3417)
    slow = make_run("bob", input={"input_content": "x" * 200}, status="ERROR")
    Run.all_users.filter(pk=slow.pk).update(content="", duration=75.2)

    page = operator_client.get(reverse("admin:agno_sessions_run_changelist"))
    rows = {row[0]: row for row in _rows(page.content.decode())}  # by short id: the first 8 characters

    assert rows[run.pk[:8]][1:] == ["What is the weather in Paris today?", "Sunny, 24 °C.", "Completed", "342 ms"]
    assert rows[slow.pk[:8]][1:] == ["x" * 79 + "…", "–", "Error", "1 min 15 s"]


def _rows(html: str) -> list[list[str]]:
    """Each result row: short run id, then the input, content, status and duration cells."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[dict[str, str]] = []
            self.cell: str | None = None

        def handle_starttag(self, tag, attrs):
            classes = dict(attrs).get("class") or ""
            if tag == "tr" and self.rows is not None:
                self.rows.append({})
            if tag in ("td", "th"):
                self.cell = next((name[len("field-"):] for name in classes.split() if name.startswith("field-")), None)

        def handle_data(self, data):
            if self.cell and self.rows:
                self.rows[-1][self.cell] = self.rows[-1].get(self.cell, "") + data

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.cell = None

    parser = Cells()
    parser.feed(html)
    return [[row["short_id"].strip(), row["input_preview"], row["content_preview"], row["status"], row["duration_display"]]
            for row in parser.rows if "short_id" in row]


def test_previews_and_durations() -> None:
    assert preview("a  b\n\tc") == "a b c"
    assert preview([{"role": "user", "content": "hi"}]) == '[{"role": "user", "content": "hi"}]'
    assert (seconds(None), seconds(0.0004), seconds(2.44), seconds(59.96), seconds(3605)) == ("–", "0 ms", "2.4 s", "60.0 s", "60 min 5 s")


@pytest.mark.parametrize("kind", ["run", "job"])
def test_a_read_only_page_has_no_save_buttons(operator_client, kind) -> None:
    obj = make_run("alice") if kind == "run" else make_job("alice")
    model = Run if kind == "run" else Job
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk])
    page = operator_client.get(url).content.decode()
    assert [button for button in SAVE_BUTTONS if button in page] == []
    assert "deletelink" in page  # deleting stays possible


def test_an_editable_page_keeps_its_save_button(operator_client) -> None:
    session = make_session("alice")
    page = operator_client.get(reverse("admin:agno_sessions_session_change", args=[session.pk])).content.decode()
    assert 'name="_save"' in page


def test_the_agent_form_does_not_edit_created_and_updated(operator_client) -> None:
    definition = definition_create(agent_id="support", name="Support", model="offline:demo")
    url = reverse("admin:agents_agentdefinition_change", args=[definition.pk])
    page = operator_client.get(url)
    form = page.context["adminform"].form
    assert sorted(form.fields) == ["agent_id", "description", "is_active", "name"]
    body = page.content.decode()
    assert 'name="created_at' not in body and 'name="updated_at' not in body
    assert "Created at" in body and "Updated at" in body  # still shown, read-only


def test_a_new_agent_shows_its_draft_form_and_no_add_another(operator_client) -> None:
    page = operator_client.get(reverse("admin:agents_agentdefinition_add"))
    draft = next(formset for formset in page.context["inline_admin_formsets"] if formset.formset.max_num == 1)
    # The draft's form is there at once; with max_num reached, admin's inlines.js adds no
    # "Add another" link (tests/ui/test_admin_browser.py sees it in Chromium).
    assert (len(draft.formset.forms), draft.formset.max_num) == (1, 1)


def test_a_new_agent_saved_with_its_draft(operator_client) -> None:
    page = operator_client.get(reverse("admin:agents_agentdefinition_add"))
    data = {"agent_id": "helper", "name": "Helper", "description": "", "is_active": "on"}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({f"{management.prefix}-{name}": value for name, value in management.initial.items()})
    prefix = next(f.formset.prefix for f in page.context["inline_admin_formsets"] if f.formset.max_num == 1)
    data.update({f"{prefix}-0-model": "offline:demo", f"{prefix}-0-instructions": "Be brief.", f"{prefix}-0-num_history_runs": "3",
                 f"{prefix}-0-num_past_sessions_to_search": "2", f"{prefix}-0-fallback_models": "[]", f"{prefix}-0-markdown": "on"})
    response = operator_client.post(reverse("admin:agents_agentdefinition_add"), data)
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    definition = AgentDefinition.objects.get(agent_id="helper")
    (draft,) = definition.versions.all()
    assert (draft.version, draft.stage, draft.instructions) == (1, "draft", "Be brief.")


def test_favicon_ico_is_the_sites_icon(client) -> None:
    response = client.get("/favicon.ico")
    assert (response.status_code, response["Content-Type"]) == (200, "image/svg+xml")
    assert response.content.startswith(b"<svg") and "max-age=86400" in response["Cache-Control"]


def test_a_new_agents_draft_takes_named_guardrails_and_a_token_budget(operator_client) -> None:
    page = operator_client.get(reverse("admin:agents_agentdefinition_add"))
    prefix = next(f.formset.prefix for f in page.context["inline_admin_formsets"] if f.formset.max_num == 1)
    guardrails = page.context["inline_admin_formsets"][0].formset.forms[0].fields["guardrails"]
    assert [name for name, _ in guardrails.choices] == ["pii", "pii_mask", "prompt_injection", "openai_moderation"]
    data = {"agent_id": "careful", "name": "Careful", "description": "", "is_active": "on"}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({f"{management.prefix}-{name}": value for name, value in management.initial.items()})
    data.update({f"{prefix}-0-model": "offline:demo", f"{prefix}-0-num_history_runs": "3", f"{prefix}-0-num_past_sessions_to_search": "2",
                 f"{prefix}-0-fallback_models": "[]", f"{prefix}-0-token_budget": "4000",
                 f"{prefix}-0-guardrails": ["prompt_injection", "pii_mask"]})
    response = operator_client.post(reverse("admin:agents_agentdefinition_add"), data)
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    (draft,) = AgentDefinition.objects.get(agent_id="careful").versions.all()
    assert (draft.guardrails, draft.token_budget) == (["prompt_injection", "pii_mask"], 4000)
    publish_draft(draft.definition)
    agent = agent_get("careful").build("alice")
    assert ([h.name for h in agent.pre_hooks], agent.token_budget) == (["prompt_injection", "pii_mask"], 4000)


def test_an_unknown_guardrail_is_refused_by_the_version(operator_client) -> None:
    definition = definition_create(agent_id="loose", name="Loose", model="offline:demo", publish=False)
    draft = definition.versions.get()
    draft.guardrails = ["pii", "telepathy"]
    with pytest.raises(ValidationError, match="Unknown guardrails: telepathy"):
        draft.full_clean()
