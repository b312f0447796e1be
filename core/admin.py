"""Admin building blocks shared by every app: cross-user querysets, a user filter, readable JSON."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html


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


class OwnedModelAdmin(admin.ModelAdmin):
    """Operators see every user's rows: the admin reads through the plain ``all_users`` manager."""

    list_per_page = 50
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = self.model.all_users.get_queryset()
        ordering = self.get_ordering(request)
        if ordering:
            queryset = queryset.order_by(*ordering)
        return queryset


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return format_html('<pre class="agno-json">{}</pre>', text)
