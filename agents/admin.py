"""Agents, teams and workflows in the admin: edit a draft, publish it; live ones only ever run published versions."""
from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from . import admin_mcp  # noqa: F401 (registers the MCP server tool policies)
from .models import AgentDefinition, AgentVersion, QuickPrompt, Stage, TeamDefinition, TeamVersion, WorkflowDefinition, WorkflowVersion
from .outline import step_outline
from .services.definitions import draft_for, next_version, publish_draft
from .registry import function_list, live_member_ids, member_kind, workflow_get
from engine.guardrails import GUARDRAILS
from engine.workflow_config import MAX_DEPTH
from .post_hooks import post_hook_choices
from .toolkits import toolkit_choices


def publish_selected(model_admin: admin.ModelAdmin, request, queryset, id_field: str) -> None:
    """The admin's publish action for agents, teams and workflows alike: each selected
    definition's draft goes live, or the operator is told why not."""
    for definition in queryset:
        name = getattr(definition, id_field)
        try:
            version = publish_draft(definition)
        except ValidationError as exc:
            model_admin.message_user(request, f"{name}: not published: {'; '.join(exc.messages)}", messages.ERROR)
            continue
        if version is None:
            model_admin.message_user(request, f"{name}: no draft to publish", messages.WARNING)
        else:
            model_admin.message_user(request, f"{name}: v{version.version} is live")


def knowledge_choices() -> list[tuple[str, str]]:
    from .knowledge import knowledge_base_list

    return [(base.name, base.name + (f" ({base.description})" if base.description else "")) for base in knowledge_base_list()]


def knowledge_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=knowledge_choices, required=False, widget=forms.CheckboxSelectMultiple,
        help_text="The knowledge bases it searches (from the knowledge app).",
    )


def post_hooks_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=post_hook_choices, required=False, widget=forms.CheckboxSelectMultiple,
        help_text="Functions run on each answer (the code modules' POST_HOOKS); a background one runs after it is delivered, as a job.",
    )


def guardrails_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=[(name, f"{name}: {label}") for name, (label, _) in GUARDRAILS.items()], required=False,
        widget=forms.CheckboxSelectMultiple, help_text="Checks of each message before the model sees it; a refusal ends the run with its reason.",
    )


class AgentVersionForm(forms.ModelForm):
    tools = forms.MultipleChoiceField(choices=toolkit_choices, required=False, widget=forms.CheckboxSelectMultiple)
    knowledge = knowledge_field()
    guardrails = guardrails_field()
    post_hooks = post_hooks_field()

    class Meta:
        model = AgentVersion
        fields = "__all__"


VERSION_FIELDS = (
    "model", "model_options", "fallback_models", "reasoning_model", "instructions", "tools", "compress_tool_results", "add_history_to_context",
    "num_history_runs", "update_memory_on_run", "add_memories_to_context", "enable_learning", "learning_name", "enable_session_summaries",
    "search_past_sessions", "num_past_sessions_to_search", "tool_call_limit", "token_budget", "guardrails", "post_hooks", "markdown", "knowledge",
    "search_knowledge", "add_knowledge_to_context", "notes",
)


class DraftVersionInline(admin.StackedInline):
    """The one editable version. Publishing it makes it live and opens the next draft."""

    model = AgentVersion
    form = AgentVersionForm
    verbose_name = "draft (not live until published)"
    verbose_name_plural = "draft"
    extra = 0
    max_num = 1
    can_delete = False
    fields = ("version", *VERSION_FIELDS)
    readonly_fields = ("version",)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(stage=Stage.DRAFT)

    def get_extra(self, request, obj=None, **kwargs) -> int:
        # No draft yet (a new agent): its form is shown at once, so there is never an "Add
        # another draft" for an agent that has none.
        if obj is None or not obj.versions.filter(stage=Stage.DRAFT).exists():
            return 1
        return 0


class PublishedVersionInline(admin.TabularInline):
    model = AgentVersion
    verbose_name = "published version"
    verbose_name_plural = "published versions (the newest is live)"
    extra = 0
    can_delete = False
    fields = ("version", "model", "tools", "published_at", "notes")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).filter(stage=Stage.PUBLISHED).order_by("-version")

    def has_add_permission(self, request, obj=None) -> bool:
        return False


# A version's bookkeeping, not its content: two versions that differ only here are the same agent.
VERSION_BOOKKEEPING = {"id", "definition", "version", "stage", "published_at", "created_at"}


def version_content(version) -> dict:
    return {
        field.attname: getattr(version, field.attname)
        for field in version._meta.concrete_fields if field.name not in VERSION_BOOKKEEPING
    }


@admin.register(AgentDefinition)
class AgentDefinitionAdmin(admin.ModelAdmin):
    list_display = ("agent_id", "name", "is_active", "live_version", "draft_version", "updated_at")
    list_filter = ("is_active",)
    search_fields = ("agent_id", "name", "description")
    inlines = [DraftVersionInline, PublishedVersionInline]
    actions = ["publish_drafts"]
    fields = ("agent_id", "name", "description", "is_active", "created_at", "updated_at")
    # Kept by the site (created; updated on every save and publish), never typed in.
    readonly_fields = ("created_at", "updated_at")

    def save_model(self, request, obj: AgentDefinition, form, change: bool) -> None:
        obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)

    @admin.display(description="live (published)")
    def live_version(self, obj: AgentDefinition) -> str:
        version = obj.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first()
        return f"v{version.version} · {version.model}" if version else "— (not published)"

    @admin.display(description="unpublished changes")
    def draft_version(self, obj: AgentDefinition) -> str:
        """The draft, when it differs from what is live. Publishing opens a new draft that copies
        the live version: that one is not news, so it is not listed."""
        draft = obj.versions.filter(stage=Stage.DRAFT).order_by("-version").first()
        if draft is None:
            return "—"
        live = obj.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first()
        if live is not None and version_content(draft) == version_content(live):
            return "—"
        return f"draft v{draft.version}"

    def save_formset(self, request, form, formset, change) -> None:
        instances = formset.save(commit=False)
        for instance in instances:
            if instance.pk is None:
                instance.definition = form.instance
                instance.version = next_version(form.instance)
                instance.stage = Stage.DRAFT
            elif instance.stage != Stage.DRAFT:
                continue  # published versions are never changed in place
            instance.save()

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        draft_for(form.instance)  # a new definition starts with an (empty) draft v1

    @admin.action(description="Publish the draft (users get it on their next run)")
    def publish_drafts(self, request, queryset) -> None:
        publish_selected(self, request, queryset, "agent_id")



def member_choices() -> list[tuple[str, str]]:
    return [(member_id, f"{member_id} ({kind})") for member_id, kind in live_member_ids()]


class TeamVersionForm(forms.ModelForm):
    tools = forms.MultipleChoiceField(choices=toolkit_choices, required=False, widget=forms.CheckboxSelectMultiple)
    knowledge = knowledge_field()
    guardrails = guardrails_field()
    post_hooks = post_hooks_field()
    members = forms.MultipleChoiceField(
        choices=member_choices, widget=forms.CheckboxSelectMultiple,
        help_text="Live agents and teams (code or database); only published ones are offered. The order is the order listed here.",
    )

    class Meta:
        model = TeamVersion
        fields = "__all__"


TEAM_VERSION_FIELDS = (
    "mode", "members", "model", "model_options", "role", "instructions", "tools", "compress_tool_results", "max_iterations", "member_timeout", "add_history_to_context",
    "num_history_runs", "update_memory_on_run", "enable_learning", "learning_name", "enable_session_summaries", "token_budget", "guardrails", "post_hooks", "markdown", "knowledge",
    "search_knowledge", "add_knowledge_to_context", "notes",
)


class TeamDraftVersionInline(DraftVersionInline):
    model = TeamVersion
    form = TeamVersionForm
    fields = ("version", *TEAM_VERSION_FIELDS)


class TeamPublishedVersionInline(PublishedVersionInline):
    model = TeamVersion
    fields = ("version", "mode", "members", "model", "published_at", "notes")
    readonly_fields = fields


@admin.register(TeamDefinition)
class TeamDefinitionAdmin(AgentDefinitionAdmin):
    """As agents: the draft is edited, the newest published version is what users run."""

    list_display = ("team_id", "name", "is_active", "live_version", "draft_version", "updated_at")
    search_fields = ("team_id", "name", "description")
    inlines = [TeamDraftVersionInline, TeamPublishedVersionInline]
    fields = ("team_id", "name", "description", "is_active", "live_members", "created_at", "updated_at")
    readonly_fields = ("live_members", "created_at", "updated_at")

    @admin.display(description="live (published)")
    def live_version(self, obj: TeamDefinition) -> str:
        version = obj.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first()
        return f"v{version.version} · {version.mode} · {', '.join(version.members)}" if version else "— (not published)"

    @admin.display(description="members of the live version")
    def live_members(self, obj: TeamDefinition) -> str:
        """Each member with its kind; one that has gone since makes the team unavailable, said here."""
        version = obj.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first() if obj.pk else None
        if version is None:
            return "— (not published)"
        kinds = {member_id: member_kind(member_id) for member_id in version.members}
        listed = ", ".join(f"{member_id} ({kind})" if kind else f"{member_id} (GONE)" for member_id, kind in kinds.items())
        gone = [member_id for member_id, kind in kinds.items() if kind is None]
        return f"{listed}. Unavailable to users until a version without {', '.join(gone)} is published." if gone else listed

    @admin.action(description="Publish the draft (users get it on their next run)")
    def publish_drafts(self, request, queryset) -> None:
        publish_selected(self, request, queryset, "team_id")


STEPS_HELP = """A JSON list of steps, in Agno's Step.to_dict() shape. Each has a "type": Step (one of "agent_id",
"team_id" or "executor_ref", a registered function; optional "max_retries", "skip_on_failure"), Steps and Parallel
("steps"), Loop ("steps", "max_iterations", "end_condition"), Condition ("evaluator": a function or true/false,
"steps", "else_steps") or Router ("selector", "choices"). Any may have a "name" and a "description"; Step, Steps, Loop,
Condition and Router a "human_review" of HumanReview's fields (at any depth: a nested review pauses the run there). The ids
you can use are listed under "Building blocks"."""


class IndentedJSONField(forms.JSONField):
    """A JSON field shown indented: a step graph is read and edited by people. JSON nested past
    what the parser can read (a ``RecursionError``) is a form error, never a 500."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except RecursionError:
            raise forms.ValidationError(f"Steps nest at most {MAX_DEPTH} deep: this JSON nests too deep to read.", code="invalid") from None

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return forms.fields.InvalidJSONInput(data)

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value  # what was typed, so it can be fixed
        return json.dumps(value, indent=2, ensure_ascii=False)


class WorkflowVersionForm(forms.ModelForm):
    # Not required: an empty graph is refused by the model's clean(), with the one message that says what a graph is.
    steps = IndentedJSONField(
        required=False, help_text=STEPS_HELP, widget=forms.Textarea(attrs={"rows": 22, "cols": 100, "class": "workflow-steps-json", "spellcheck": "false"}),
    )

    class Meta:
        model = WorkflowVersion
        fields = "__all__"

    class Media:
        js = ("chat/js/workflow_composer.js",)
        css = {"all": ("chat/css/workflow_composer.css",)}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The composer offers these (the server still checks every id on save).
        members = live_member_ids()
        self.fields["steps"].widget.attrs.update({
            "data-agents": json.dumps([member_id for member_id, kind in members if kind == "agent"]),
            "data-teams": json.dumps([member_id for member_id, kind in members if kind == "team"]),
            "data-functions": json.dumps(function_list()),
        })


def steps_preview_html(steps) -> str:
    outline = step_outline(steps)
    if not outline:
        return "—"
    return render_to_string("admin/console/workflow_steps.html", {"steps": outline})


class WorkflowDraftVersionInline(DraftVersionInline):
    model = WorkflowVersion
    form = WorkflowVersionForm
    fields = ("version", "steps", "steps_preview", "notes")
    readonly_fields = ("version", "steps_preview")

    @admin.display(description="preview (as saved)")
    def steps_preview(self, obj: WorkflowVersion) -> str:
        return steps_preview_html(obj.steps) if obj and obj.pk else "— (saved with the page)"


class WorkflowPublishedVersionInline(PublishedVersionInline):
    model = WorkflowVersion
    fields = ("version", "steps_preview", "published_at", "notes")
    readonly_fields = fields

    @admin.display(description="steps")
    def steps_preview(self, obj: WorkflowVersion) -> str:
        return steps_preview_html(obj.steps)


@admin.register(WorkflowDefinition)
class WorkflowDefinitionAdmin(AgentDefinitionAdmin):
    """As agents and teams: the draft's step graph is edited, the newest published version is what users run."""

    list_display = ("workflow_id", "name", "is_active", "live_version", "draft_version", "updated_at")
    search_fields = ("workflow_id", "name", "description")
    inlines = [WorkflowDraftVersionInline, WorkflowPublishedVersionInline]
    fields = ("workflow_id", "name", "description", "is_active", "live_status", "building_blocks", "created_at", "updated_at")
    readonly_fields = ("live_status", "building_blocks", "created_at", "updated_at")

    @admin.display(description="live (published)")
    def live_version(self, obj: WorkflowDefinition) -> str:
        version = obj.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first()
        if version is None:
            return "— (not published)"
        outline = step_outline(version.steps)
        return f"v{version.version} · {len(outline)} step{'s' if len(outline) != 1 else ''}: {', '.join(f'{node.step_type} {node.name}'.strip() for node in outline)}"

    @admin.display(description="served to users")
    def live_status(self, obj: WorkflowDefinition) -> str:
        """Whether users get it, and if not why (an agent, team or function it names has gone)."""
        if not obj.pk:
            return "— (not published)"
        version = obj.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first()
        if version is None:
            return "— (not published)"
        if not obj.is_active:
            return f"No: v{version.version} is published, but the workflow is inactive."
        if workflow_get(obj.workflow_id) is not None:
            return f"Yes: v{version.version}."
        from .registry import workflow_steps_check

        problems = workflow_steps_check(version.steps)
        return f"No: v{version.version} no longer builds ({'; '.join(problems)}). Publish a version that does."

    @admin.display(description="building blocks")
    def building_blocks(self, obj: WorkflowDefinition | None) -> str:
        """The ids a step may name: live agents and teams, and the registered functions."""
        members = live_member_ids()
        agents = format_html_join(", ", "<code>{}</code>", ((member_id,) for member_id, kind in members if kind == "agent"))
        teams = format_html_join(", ", "<code>{}</code>", ((member_id,) for member_id, kind in members if kind == "team"))
        functions = format_html_join(", ", "<code>{}</code>{}", ((name, f" ({doc})" if doc else "") for name, doc in function_list()))
        return format_html(
            "<p>agent_id: {}</p><p>team_id: {}</p><p>executor_ref, evaluator, selector, end_condition (FUNCTIONS in AGENT_MODULES): {}</p>",
            agents or "—", teams or "—", functions or "—",
        )

    @admin.action(description="Publish the draft (users get it on their next run)")
    def publish_drafts(self, request, queryset) -> None:
        publish_selected(self, request, queryset, "workflow_id")


@admin.register(QuickPrompt)
class QuickPromptAdmin(admin.ModelAdmin):
    """The chat's quick prompts per agent, team or workflow (``/config``'s ``chat.quick_prompts``),
    after those the code declares; ``clean`` checks the component exists."""

    list_display = ("prompt", "component_type", "component_id", "position")
    list_filter = ("component_type",)
    search_fields = ("component_id", "prompt")
    list_editable = ("position",)
    fields = ("component_type", "component_id", "prompt", "position")
