"""The operator console: Django's admin site, branded as this product and grouped by the
operator's tasks rather than by the Django app that happens to define each table.

Installed as the default admin site (``ConsoleAdminConfig`` below, in INSTALLED_APPS in place of
``django.contrib.admin``), so every ``@admin.register`` in the apps lands here unchanged.
"""
from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest

# (group label, [(app_label, model_name), ...]): the index and the sidebar list the tables in
# this order. A registered table named nowhere here is listed under "Other", never lost.
GROUPS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Runs and jobs", [
        ("agno_sessions", "run"), ("agno_sessions", "session"), ("jobs", "job"), ("approvals", "approval"),
        ("agno_sessions", "runfeedback"), ("agno_sessions", "runevent"), ("importer", "agnoimport"), ("importer", "importedrecord"),
    ]),
    ("Agents, teams and workflows", [
        ("agents", "agentdefinition"), ("agents", "teamdefinition"), ("agents", "workflowdefinition"), ("agents", "quickprompt"),
        ("agents", "mcptoolpolicy"),
    ]),
    ("Knowledge", [
        ("knowledge", "knowledgebase"), ("knowledge", "content"), ("knowledge", "chunk"), ("agno_sessions", "usermemory"), ("learnings", "learning"),
    ]),
    ("Schedules", [
        ("scheduler", "schedule"), ("scheduler", "schedulerun"), ("django_celery_beat", "periodictask"),
    ]),
    ("Users and access", [
        ("auth", "user"), ("auth", "group"), ("core", "accesstoken"), ("chat", "sharedconversation"),
        ("axes", "accessattempt"), ("axes", "accessfailurelog"), ("axes", "accesslog"),
    ]),
    ("Observability", [
        ("traces", "trace"), ("traces", "span"), ("evals", "evalrun"), ("evals", "evalbatch"), ("evals", "evaldataset"),
        ("metrics", "metricsaggregate"), ("metrics", "metricsrefreshstate"),
    ]),
]


def _slug(label: str) -> str:
    return "console-" + "-".join("".join(ch for ch in label.lower() if ch.isalnum() or ch == " ").split())


class ConsoleAdminSite(admin.AdminSite):
    site_header = "Agno Site · operator console"
    site_title = "Agno Site console"
    index_title = "Operator console"

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        """By task on the index and in the sidebar; an app's own page (``/admin/<app>/``) stays Django's."""
        if app_label is not None:
            return super().get_app_list(request, app_label)
        models = {
            (app["app_label"], model["object_name"].lower()): (app, model)
            for app in self._build_app_dict(request).values()
            for model in app["models"]
        }
        grouped: list[dict] = []
        for label, keys in GROUPS:
            entries = [models.pop(key) for key in keys if key in models]
            if entries:
                grouped.append(self._group(label, entries))
        if models:
            grouped.append(self._group("Other", sorted(models.values(), key=lambda entry: entry[1]["name"])))
        return grouped

    @staticmethod
    def _group(label: str, entries: list[tuple[dict, dict]]) -> dict:
        return {
            "name": label,
            # The template names the group's CSS class and its rows' ids after this.
            "app_label": _slug(label),
            "app_url": "",  # a group is not an app: no page of its own (templates/admin/app_list.html)
            "has_module_perms": True,
            "models": [model for _, model in entries],
        }


class ConsoleAdminConfig(AdminConfig):
    """Django's admin with the operator console as its site. (Not in core.apps: an AdminConfig
    there would be a second default config for the ``core`` app.)"""

    default_site = "core.console_site.ConsoleAdminSite"
