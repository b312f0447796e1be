from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from core.admin import OwnedModelAdmin, UserIdFilter, preview, pretty_json, seconds

from .models import Run, RunEvent, Session, UserMemory


def _changelist_link(model: type, label: str, **filters: str) -> str:
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    query = "&".join(f"{key}={value}" for key, value in filters.items())
    return format_html('<a href="{}?{}">{}</a>', url, query, label)


def _change_link(obj: object, label: str) -> str:
    meta = obj._meta  # type: ignore[attr-defined]
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])  # type: ignore[attr-defined]
    return format_html('<a href="{}">{}</a>', url, label)


def short(value: str, length: int = 8) -> str:
    """The first ``length`` characters of an id, the whole id as its tooltip."""
    if len(value) <= length:
        return value
    return format_html('<span class="short-id" title="{}">{}</span>', value, value[:length] if length == 8 else value[: length - 1] + "…")


# What apps above this one show on a run's page (traces: the run's trace), registered from their own
# admin modules: sessions imports none of them.
_run_links: list[Callable[[Run], str]] = []


def register_run_link(link: Callable[[Run], str]) -> Callable[[Run], str]:
    """Show ``link(run)`` on a run's admin page after its events, labelled by its ``admin.display``
    description; its name is the row's CSS class (``field-<name>``). Usable as a decorator."""
    if link not in _run_links:
        _run_links.append(link)
    return link


@admin.register(Session)
class SessionAdmin(OwnedModelAdmin):
    list_display = ("session_id", "session_name", "session_type", "component_id", "user_id", "total_tokens", "created_at", "updated_at", "runs_link")
    list_filter = ("session_type", UserIdFilter, "created_at")
    search_fields = ("session_id", "session_name", "component_id", "user_id")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    readonly_fields = ("session_id", "session_type", "origin", "component_id", "user_id", "next_run_index", "total_tokens", "created_at", "updated_at", "runs_link", "state_json", "metadata_json", "summary_json", "metrics_json", "component_json")
    fields = ("session_id", "session_name", "session_type", "origin", "component_id", "user_id", "runs_link", "total_tokens", "next_run_index", "created_at", "updated_at", "state_json", "metadata_json", "summary_json", "metrics_json", "component_json")

    @admin.display(description="runs")
    def runs_link(self, obj: Session) -> str:
        return _changelist_link(Run, f"{obj.next_run_index} runs", session__session_id__exact=obj.pk)

    @admin.display(description="session state")
    def state_json(self, obj: Session) -> str:
        return pretty_json(obj.session_state)

    @admin.display(description="metadata")
    def metadata_json(self, obj: Session) -> str:
        return pretty_json(obj.metadata)

    @admin.display(description="summary")
    def summary_json(self, obj: Session) -> str:
        return pretty_json(obj.summary)

    @admin.display(description="metrics")
    def metrics_json(self, obj: Session) -> str:
        return pretty_json(obj.metrics)

    @admin.display(description="component")
    def component_json(self, obj: Session) -> str:
        return pretty_json(obj.component_data)


@admin.register(Run)
class RunAdmin(OwnedModelAdmin):
    # The columns an operator scans, fitting a 1,400 px screen beside the filters: ids shortened
    # (the full id is the tooltip, the search box and the run's page, which links its session),
    # the time compact, the input and reply given the room.
    list_display = ("short_id", "when", "status", "component_id", "short_user", "input_preview", "content_preview", "duration_display", "tokens")
    list_filter = ("status", "run_type", UserIdFilter, "created_at")
    search_fields = ("run_id", "session__session_id", "component_id", "user_id", "content")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    list_select_related = ("session",)
    readonly_fields = ("run_id", "session_link", "run_index", "parent_run_id", "origin", "previous_run_id", "branch_active", "status", "run_type", "component_id", "user_id", "model", "input_tokens", "output_tokens", "total_tokens", "duration_display", "error", "created_at", "started_at", "finished_at", "updated_at", "events_link", "member_runs", "input_json", "content", "run_data_json")
    exclude = ("session", "input", "run_data", "duration")

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        # The links other apps registered follow the run's events.
        at = fields.index("events_link") + 1
        fields = (*fields[:at], *_run_links, *fields[at:])
        # Only a team run has member runs (its child rows); other runs do not show the table.
        return fields if obj is not None and obj.run_type == "team" else tuple(field for field in fields if field != "member_runs")

    def has_add_permission(self, request) -> bool:  # runs are created by running agents
        return False

    @admin.display(description="run", ordering="run_id")
    def short_id(self, obj: Run) -> str:
        return short(obj.pk)

    @admin.display(description="user", ordering="user_id")
    def short_user(self, obj: Run) -> str:
        return short(obj.user_id, 16) if obj.user_id else "–"

    @admin.display(description="created", ordering="created_at")
    def when(self, obj: Run) -> str:
        local = timezone.localtime(obj.created_at)
        return format_html('<time datetime="{}" title="{}">{}</time>', local.isoformat(), local.isoformat(sep=" ", timespec="seconds"), local.strftime("%b %d %H:%M"))

    @admin.display(description="tokens", ordering="total_tokens")
    def tokens(self, obj: Run) -> int:
        return obj.total_tokens

    def changelist_view(self, request, extra_context=None):
        # The widest list in the console gets the whole screen: the index and the breadcrumbs
        # lead everywhere the sidebar would.
        return super().changelist_view(request, {"is_nav_sidebar_enabled": False, **(extra_context or {})})

    @admin.display(description="session", ordering="session")
    def session_link(self, obj: Run) -> str:
        return _change_link(obj.session, obj.session_id)

    @admin.display(description="input")
    def input_preview(self, obj: Run) -> str:
        message = obj.input.get("input_content", obj.input) if isinstance(obj.input, dict) else obj.input
        return preview(message) if message else "–"

    @admin.display(description="content")
    def content_preview(self, obj: Run) -> str:
        return preview(obj.content) if obj.content else "–"

    @admin.display(description="duration", ordering="duration")
    def duration_display(self, obj: Run) -> str:
        return seconds(obj.duration)

    @admin.display(description="events")
    def events_link(self, obj: Run) -> str:
        return _changelist_link(RunEvent, "events of this run", run__run_id__exact=obj.pk)

    @admin.display(description="member runs")
    def member_runs(self, obj: Run) -> str:
        """The runs the team's members did for this run (child rows by ``parent_run_id``), read-only."""
        children = Run.all_users.filter(parent_run_id=obj.pk).order_by("created_at", "run_index")
        if not children:
            return "– (no member ran)"
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((_change_link(child, child.pk), child.component_id, child.run_type, child.get_status_display(), child.total_tokens) for child in children),
        )
        return format_html(
            '<table class="member-runs"><thead><tr><th>run</th><th>member</th><th>kind</th><th>status</th><th>tokens</th></tr></thead><tbody>{}</tbody></table>', rows,
        )

    @admin.display(description="input")
    def input_json(self, obj: Run) -> str:
        return pretty_json(obj.input)

    @admin.display(description="run data")
    def run_data_json(self, obj: Run) -> str:
        return pretty_json(obj.run_data)


@admin.register(RunEvent)
class RunEventAdmin(OwnedModelAdmin):
    list_display = ("run_link", "event_index", "event", "user_id", "created_at")
    list_filter = ("event", UserIdFilter, "created_at")
    search_fields = ("run__run_id",)
    ordering = ("-created_at", "event_index")
    readonly_fields = ("run_link", "event_index", "event", "user_id", "created_at", "payload_json")
    exclude = ("run", "payload")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="run", ordering="run")
    def run_link(self, obj: RunEvent) -> str:
        return _change_link(obj.run, obj.run_id)

    @admin.display(description="payload")
    def payload_json(self, obj: RunEvent) -> str:
        return pretty_json(obj.payload)


@admin.register(UserMemory)
class UserMemoryAdmin(OwnedModelAdmin):
    list_display = ("memory_id", "user_id", "memory", "topics", "agent_id", "team_id", "updated_at")
    list_filter = (UserIdFilter, "updated_at")
    search_fields = ("memory_id", "memory", "user_id", "topics_key")
    ordering = ("-updated_at",)
    readonly_fields = ("memory_id", "created_at", "updated_at")
    fields = ("memory_id", "user_id", "memory", "topics", "input", "agent_id", "team_id", "created_at", "updated_at")

    def save_model(self, request, obj: UserMemory, form, change: bool) -> None:
        from .services import memory_topics_key

        obj.topics_key = memory_topics_key(obj.topics)
        super().save_model(request, obj, form, change)


from . import feedback_admin  # noqa: E402,F401  (reply feedback, registered in its own module)
