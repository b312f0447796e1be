"""Discovery endpoints: the landing JSON, /info and /config."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.components import component_list, component_summaries, config_section, kind_get

from .routing import plain_api_view
from .views import AgentOSView


@plain_api_view("GET")
def landing(request: HttpRequest):
    """``GET /``: AgentOS's minimal landing JSON; a browser asking for HTML goes to the chat UI."""
    accept = request.headers.get("Accept", "")
    if "text/html" in accept:
        return HttpResponseRedirect("/chat/")
    body: dict[str, Any] = {"name": settings.AGENT_OS_NAME, "health": "/health", "info": "/info"}
    if settings.DOCS_ENABLED:
        body["docs"] = "/docs"
    return JsonResponse(body)


def auth_mode() -> str:
    return settings.AGENT_OS_AUTH_MODE


class InfoView(AgentOSView):
    """Lightweight, unauthenticated metadata."""

    public = True

    @extend_schema(
        operation_id="get_info",
        tags=["Core"],
        responses={200: inline_serializer("InfoResponse", {
            "os_id": serializers.CharField(), "name": serializers.CharField(allow_null=True),
            "os_version": serializers.CharField(), "agno_version": serializers.CharField(),
            "agent_count": serializers.IntegerField(), "team_count": serializers.IntegerField(),
            "workflow_count": serializers.IntegerField(), "mcp": serializers.DictField(),
            "auth_mode": serializers.ChoiceField(["none", "security_key", "jwt"]),
            "user_isolation": serializers.BooleanField(),
        })},
    )
    def get(self, request):
        return Response({
            "os_id": settings.AGENT_OS_ID,
            "name": settings.AGENT_OS_NAME,
            "os_version": settings.AGENT_OS_VERSION,
            "agno_version": AGNO_COMPATIBLE_VERSION,
            "agent_count": len(component_list("agent")),
            "team_count": len(component_list("team")),
            "workflow_count": len(component_list("workflow")),
            "mcp": mcp_info(),
            "auth_mode": auth_mode(),
            "user_isolation": settings.AGENT_OS_USER_ISOLATION,
        })


def mcp_info() -> dict[str, Any]:
    """AgentOS's McpInfo: the platform's MCP server (mcp_server.asgi), on unless MCP_SERVER_ENABLED=false."""
    enabled = settings.MCP_SERVER_ENABLED
    return {"enabled": enabled, "path": "/mcp" if enabled else None, "oauth": None, "tool_run_endpoint": False}


# The AgentOS release whose wire API this server implements.
AGNO_COMPATIBLE_VERSION = "3.1.10"


class ConfigView(AgentOSView):
    """What this OS offers: databases, models and the rosters the caller may see."""

    scope_family = "config"

    @extend_schema(operation_id="get_config", tags=["Core"], responses={200: inline_serializer("ConfigResponse", {
        "os_id": serializers.CharField(), "description": serializers.CharField(required=False),
        "chat": inline_serializer("ChatConfig", {"quick_prompts": serializers.DictField(child=serializers.ListField(child=serializers.CharField()))}, required=False),
        "available_models": serializers.ListField(child=serializers.DictField()),
        "os_database": serializers.CharField(), "databases": serializers.ListField(child=serializers.CharField()),
        "session": serializers.DictField(), "memory": serializers.DictField(), "learning": serializers.DictField(), "metrics": serializers.DictField(), "knowledge": serializers.DictField(),
        "traces": serializers.DictField(), "evals": serializers.DictField(),
        "queue": serializers.DictField(),
        "agents": serializers.ListField(child=serializers.DictField()), "teams": serializers.ListField(child=serializers.DictField()),
        "workflows": serializers.ListField(child=serializers.DictField()), "interfaces": serializers.ListField(child=serializers.DictField()),
    })})
    def get(self, request):
        from .views import database_id

        ids = self.principal.visible_ids("agents")
        agents = [entry for entry in component_list("agent") if ids is None or entry.component_id in ids]
        models: dict[tuple[str, str], dict[str, str]] = {}
        for entry in agents:
            model = entry.template.model if entry.template else None
            if model is not None:
                models.setdefault((model.id, model.provider), {"id": model.id, "provider": model.provider})
        db = database_id()

        def domain(table: str | None) -> dict[str, Any]:
            entry: dict[str, Any] = {"db_id": db, "domain_config": {"display_name": db}}
            if table:
                entry["tables"] = [table]
            return {"dbs": [entry]}

        body: dict[str, Any] = {"os_id": settings.AGENT_OS_ID}
        if settings.AGENT_OS_DESCRIPTION:
            body["description"] = settings.AGENT_OS_DESCRIPTION
        quick_prompts = config_section("quick_prompts", self.principal)
        if quick_prompts:
            # As AgentOS's ChatConfig: the prompts the chat offers, by component id.
            body["chat"] = {"quick_prompts": quick_prompts}
        return Response({
            **body,
            "available_models": list(models.values()),
            "os_database": db,
            "databases": [db],
            "session": domain("agno_sessions"),
            "memory": domain("agno_memories"),
            # The learnings of /learnings and of agents with learning on (the learnings app).
            "learning": domain("agno_learnings"),
            "metrics": domain("agno_metrics"),
            "traces": domain(None),  # as AgentOS: the traces domain names no table
            # As AgentOS: the knowledge bases this OS offers ({id, name, description?}) as
            # knowledge instances of the one database.
            "knowledge": {
                **domain("agno_knowledge"),
                "knowledge_instances": [
                    {**base, "db_id": db, "table": "agno_knowledge"} for base in config_section("knowledge", self.principal) or []
                ],
            },
            "evals": domain("agno_eval_runs"),
            "filesystem": {"namespaces": []},
            # Background runs are durable jobs (the agno_jobs table, claimed by any worker), and a
            # session's jobs run one at a time in submission order.
            "queue": {"durable": True, "queue_per_session": True},
            "agents": [kind_get("agent").summary(entry) for entry in agents],
            "teams": component_summaries("team", _visible(self.principal, "teams")),
            "workflows": component_summaries("workflow", _visible(self.principal, "workflows")),
            "interfaces": [],
            "mcp": mcp_info(),  # not in AgentOS's /config: where the MCP server is, as /info says
        })


def _visible(principal, family: str):
    ids = principal.visible_ids(family)
    return lambda component_id: ids is None or component_id in ids
