"""Admin building blocks shared by every app: cross-user querysets, a user filter, readable JSON."""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from .logins import AdminLoginForm
from .models import AccessToken
from .tenancy import ALL_USERS, unscoped

# The admin's login page says when a lockout refused a login (core.logins), as the chat's does.
admin.site.login_form = AdminLoginForm


class UserIdFilter(admin.SimpleListFilter):
    """Filter by owner with a free-text box (there can be millions of user ids)."""

    title = "user"
    parameter_name = "user_id"
    template = "admin/input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # A non-empty lookups() is what makes Django render the filter at all.
        return [("", "")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None or value == "":
            return queryset
        if value == "-":
            return queryset.filter(user_id__isnull=True)
        return queryset.filter(user_id=value)

    def choices(self, changelist: Any):
        # The template reads the current value and the other query parameters from here.
        all_choice = next(iter(super().choices(changelist)))
        all_choice["query_parts"] = [
            (key, value)
            for key, value in changelist.get_filters_params().items()
            if key != self.parameter_name
        ]
        all_choice["current"] = self.value() or ""
        yield all_choice


class NoSaveOnReadOnlyPages:
    """A change page where nothing can be edited (every field read-only, no inline form) shows
    no Save buttons: saving would change nothing. Delete stays where it is allowed."""

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if not add and not context["adminform"].form.fields and not context.get("inline_admin_formsets"):
            context.update(show_save=False, show_save_and_continue=False, show_save_and_add_another=False)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)


def preview(value: Any, length: int = 80) -> str:
    """One line of at most ``length`` characters (an ellipsis says there was more)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1] + "…"


def seconds(value: float | None) -> str:
    """A duration with its unit: 340 ms, 2.4 s, 3 min 5 s."""
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest} s"


class OwnedModelAdmin(NoSaveOnReadOnlyPages, admin.ModelAdmin):
    """Operators see every user's rows: the admin reads through the plain ``all_users`` manager."""

    list_per_page = 50
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = self.model.all_users.get_queryset()
        ordering = self.get_ordering(request)
        if ordering:
            queryset = queryset.order_by(*ordering)
        return queryset

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Django's delete preview walks the cascade through the related models' base managers,
        # keyed by the parents' primary keys: the operator's every-user read.
        with unscoped("the admin's delete preview: the rows a delete would cascade to"):
            return super().get_deleted_objects(objs, request)


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return format_html('<pre class="agno-json">{}</pre>', text)


NO_SCOPES = "A token needs at least one scope: one with none can do nothing."


def user_choices() -> list[tuple[str, str]]:
    """The sign-in accounts, by user id (a user's id is their username)."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.order_by("username").values_list("username", flat=True)
    return [("", "— none (a service account of no one's)"), *((name, name) for name in users)]


class AccessTokenAdminForm(forms.ModelForm):
    user_id = forms.ChoiceField(
        label="user", choices=user_choices, required=False,
        help_text="Whose token it is. A personal token acts as this user; a service account is owned by them (or by no one).",
    )
    scopes_text = forms.CharField(
        label="scopes", error_messages={"required": NO_SCOPES},
        help_text="Space- or comma-separated, e.g. agents:read agents:run sessions:read. agent_os:admin grants everything.",
    )
    ttl_days = forms.IntegerField(label="expires in (days)", required=False, min_value=1, initial=90, help_text="Empty: never expires.")

    class Meta:
        model = AccessToken
        fields = ("name", "kind", "user_id")

    def clean_scopes_text(self) -> str:
        from .services.tokens import InvalidScopes, normalize_scopes

        try:
            scopes = normalize_scopes(self.cleaned_data.get("scopes_text", ""))
        except InvalidScopes as exc:
            raise forms.ValidationError(str(exc)) from None
        if not scopes:
            raise forms.ValidationError(NO_SCOPES)
        return " ".join(scopes)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        from .models import TokenKind

        if cleaned.get("kind") == TokenKind.PERSONAL and not cleaned.get("user_id"):
            self.add_error("user_id", "A personal token acts as a user: pick one.")
        return cleaned


@admin.register(AccessToken)
class AccessTokenAdmin(OwnedModelAdmin):
    """Personal access tokens and service accounts. The secret is shown once, at creation."""

    form = AccessTokenAdminForm
    list_display = ("name", "kind", "user_id", "token_prefix", "scope_list", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("kind", UserIdFilter, "revoked_at", "created_at")
    search_fields = ("name", "user_id", "token_prefix")
    ordering = ("-created_at",)
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "kind", "user_id", "scopes_text", "ttl_days")
        return ("name", "kind", "user_id", "token_prefix", "scopes", "created_by", "created_at", "expires_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("name", "kind", "user_id", "token_prefix", "scopes", "created_by", "created_at", "expires_at", "last_used_at", "revoked_at")

    @admin.display(description="scopes")
    def scope_list(self, obj: AccessToken) -> str:
        return " ".join(obj.scopes)

    def save_model(self, request, obj: AccessToken, form, change: bool) -> None:
        if change:
            return  # tokens are immutable; revoke and create a new one
        from .auth import OPERATOR
        from .services.tokens import access_token_create

        created, secret = access_token_create(
            name=form.cleaned_data["name"],
            kind=form.cleaned_data["kind"],
            user_id=form.cleaned_data.get("user_id") or None,
            scopes=form.cleaned_data.get("scopes_text", ""),
            ttl_days=form.cleaned_data.get("ttl_days"),
            created_by=request.user.get_username(),
            granted_by=OPERATOR,  # a staff user with the add permission holds the server
        )
        obj.pk = created.pk
        messages.warning(request, f"Copy this token now, it is not shown again: {secret}")

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        from .services.tokens import access_token_revoke

        for token in queryset:
            access_token_revoke(token_id=token.pk, user=ALL_USERS)
        self.message_user(request, f"Revoked {queryset.count()} token(s).")


# --- Tables the product keeps itself -------------------------------------------------------------
# django-celery-beat's schedule tables are written by the scheduler (scheduler.services.beat keeps
# each Schedule's PeriodicTask and CrontabSchedule in step, in the schedule's own transaction; the
# sweep's interval comes from settings). An operator editing them would change a schedule behind
# the scheduler's back, or silently move every schedule sharing a crontab:
# * crontabs, intervals, solar events and clocked times are hidden (they are the periodic tasks'
#   parameters, shown on each periodic task's page);
# * periodic tasks stay visible, read-only: when beat last sent each, how often; a schedule is
#   changed on its own page (Schedules → Schedules) or by its owner.
from django_celery_beat import admin as beat_admin  # noqa: E402  (registered before core in INSTALLED_APPS)
from django_celery_beat.models import ClockedSchedule, CrontabSchedule, IntervalSchedule, PeriodicTask, SolarSchedule  # noqa: E402

for _model in (ClockedSchedule, CrontabSchedule, IntervalSchedule, SolarSchedule, PeriodicTask):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


@admin.register(PeriodicTask)
class ReadOnlyPeriodicTaskAdmin(NoSaveOnReadOnlyPages, beat_admin.PeriodicTaskAdmin):
    """Beat's view of the schedules, to read: the scheduler writes these rows."""

    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
