"""Agents and teams in the admin: edit a draft, publish it; live ones only ever run published versions."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils import timezone

from core.admin import OwnedModelAdmin, UserIdFilter

from .models import AgentDefinition, AgentVersion, CancelIntent, Job, Stage, TeamDefinition, TeamVersion
from .services.definitions import draft_for, next_version, publish_draft
from .registry import live_member_ids, member_kind
from .toolkits import toolkit_choices


def knowledge_choices() -> list[tuple[str, str]]:
    from .knowledge import knowledge_base_list

    return [(base.name, base.name + (f" ({base.description})" if base.description else "")) for base in knowledge_base_list()]


def knowledge_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=knowledge_choices, required=False, widget=forms.CheckboxSelectMultiple,
        help_text="The knowledge bases it searches (from the knowledge app).",
    )


class AgentVersionForm(forms.ModelForm):
    tools = forms.MultipleChoiceField(choices=toolkit_choices, required=False, widget=forms.CheckboxSelectMultiple)
    knowledge = knowledge_field()

    class Meta:
        model = AgentVersion
        fields = "__all__"


VERSION_FIELDS = (
    "model", "fallback_models", "reasoning_model", "instructions", "tools", "add_history_to_context",
    "num_history_runs", "update_memory_on_run", "add_memories_to_context", "enable_session_summaries",
    "search_past_sessions", "num_past_sessions_to_search", "tool_call_limit", "markdown", "knowledge",
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

    @admin.display(description="draft")
    def draft_version(self, obj: AgentDefinition) -> str:
        version = obj.versions.filter(stage=Stage.DRAFT).order_by("-version").first()
        return f"v{version.version}" if version else "—"

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
        for definition in queryset:
            version = publish_draft(definition)
            if version is None:
                self.message_user(request, f"{definition.agent_id}: no draft to publish", messages.WARNING)
            else:
                self.message_user(request, f"{definition.agent_id}: v{version.version} is live")



def member_choices() -> list[tuple[str, str]]:
    return [(member_id, f"{member_id} ({kind})") for member_id, kind in live_member_ids()]


class TeamVersionForm(forms.ModelForm):
    tools = forms.MultipleChoiceField(choices=toolkit_choices, required=False, widget=forms.CheckboxSelectMultiple)
    knowledge = knowledge_field()
    members = forms.MultipleChoiceField(
        choices=member_choices, widget=forms.CheckboxSelectMultiple,
        help_text="Live agents and teams (code or database); only published ones are offered. The order is the order listed here.",
    )

    class Meta:
        model = TeamVersion
        fields = "__all__"


TEAM_VERSION_FIELDS = (
    "mode", "members", "model", "role", "instructions", "tools", "max_iterations", "member_timeout", "add_history_to_context",
    "num_history_runs", "update_memory_on_run", "enable_session_summaries", "markdown", "knowledge",
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
        for definition in queryset:
            try:
                version = publish_draft(definition)
            except ValidationError as exc:
                self.message_user(request, f"{definition.team_id}: not published: {'; '.join(exc.messages)}", messages.ERROR)
                continue
            if version is None:
                self.message_user(request, f"{definition.team_id}: no draft to publish", messages.WARNING)
            else:
                self.message_user(request, f"{definition.team_id}: v{version.version} is live")


@admin.register(CancelIntent)
class CancelIntentAdmin(OwnedModelAdmin):
    list_display = ("run_id", "user_id", "created_at")
    list_filter = (UserIdFilter, "created_at")
    search_fields = ("run_id", "user_id")
    ordering = ("-created_at",)


@admin.register(Job)
class JobAdmin(OwnedModelAdmin):
    """Background runs: status, attempts, lease and worker; cancel and retry."""

    list_display = ("id", "component_id", "user_id", "session_id", "status", "attempts", "locked_by", "lease_expires_at", "created_at", "started_at", "completed_at")
    list_filter = ("status", UserIdFilter, "component_id", "created_at")
    search_fields = ("id", "session_id", "user_id", "component_id", "idempotency_key", "locked_by")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    readonly_fields = [field.name for field in Job._meta.fields]
    actions = ["cancel_jobs", "retry_jobs"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="attempts")
    def attempts(self, obj: Job) -> str:
        return f"{obj.attempt}/{obj.max_attempts}"

    @admin.action(description="Cancel (queued or paused: now; running: at its next step)")
    def cancel_jobs(self, request, queryset) -> None:
        from .services.cancellation import cancel_request
        from .services.jobs import job_cancel

        for job in queryset:
            cancel_request(run_id=job.pk, user_id=job.user_id)
            job_cancel(job_id=job.pk, reason="cancelled by an operator")
        self.message_user(request, f"Cancellation requested for {queryset.count()} job(s).")

    @admin.action(description="Retry failed or cancelled jobs (same run, one more attempt)")
    def retry_jobs(self, request, queryset) -> None:
        from .services.jobs import job_requeue

        retried = [job.pk for job in queryset if job_requeue(job_id=job.pk) is not None]
        skipped = queryset.count() - len(retried)
        self.message_user(request, f"Requeued {len(retried)} job(s)" + (f"; {skipped} were not failed or cancelled." if skipped else "."))
