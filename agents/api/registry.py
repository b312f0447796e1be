"""``GET /registry``: what a stored definition may reference, in AgentOS's ``RegistryContentResponse``.

The building blocks the admin offers: toolkits (an agent's or a team leader's ``tools``, type
``tool``), registered functions (a workflow step's ``executor_ref``, ``evaluator``, ``selector``,
``end_condition``: type ``function``), model providers (``model`` is ``provider:model_id``: type
``model``), knowledge bases (``knowledge``), and the live agents and teams (a team's ``members``,
a step's ``agent_id`` / ``team_id``). Scope ``registry:read``.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.params import choice, envelope, page
from core.api.schema import ErrorOut, PaginationInfoOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView

from ..knowledge import knowledge_base_list
from ..registry import agent_list, function_list, team_list
from engine.models import PROVIDERS
from learnings.machines import LEARNING_MACHINES
from ..toolkits import TOOLKITS

# AgentOS's RegistryResourceType: the filter accepts every one; this server has entries of some.
RESOURCE_TYPES = (
    "tool", "model", "db", "vector_db", "schema", "function", "agent", "team", "workflow", "knowledge",
    "memory_manager", "session_summary_manager", "learning",
)
MODEL_EXAMPLES = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-3-5-haiku-latest", "offline": "offline:demo"}


def _entry(type_: str, id_: str, name: str, description: str | None, **metadata: Any) -> dict[str, Any]:
    body = {"name": name, "type": type_, "id": id_, "description": description or None, "metadata": metadata or None, "sandboxed": False}
    return {key: value for key, value in body.items() if value is not None}


def registry_entries() -> list[dict[str, Any]]:
    """Every entry, grouped by type in the order a definition's form lists them."""
    entries = [_entry("tool", entry.id, entry.name, entry.description, referenced_as="tools") for entry in TOOLKITS.values()]
    entries += [_entry("function", name, name, doc, referenced_as="executor_ref, evaluator, selector, end_condition") for name, doc in function_list()]
    entries += [_entry("model", provider, provider, f"Models of {provider}: model is provider:model_id", example=MODEL_EXAMPLES[provider], referenced_as="model") for provider in PROVIDERS]
    entries += [_entry("learning", name, name, description, referenced_as="learning_name") for name, (_, description) in LEARNING_MACHINES.items()]
    entries += [_entry("knowledge", base.name, base.name, base.description, referenced_as="knowledge") for base in knowledge_base_list()]
    entries += [_entry("agent", agent.agent_id, agent.name, agent.description, source=agent.source, referenced_as="members, agent_id") for agent in agent_list()]
    entries += [_entry("team", team.team_id, team.name, team.description, source=team.source, referenced_as="members, team_id") for team in team_list()]
    return entries


class RegistryEntryOut(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=RESOURCE_TYPES)
    id = serializers.CharField(required=False)
    description = serializers.CharField(required=False)
    metadata = serializers.DictField(required=False, help_text="referenced_as: the config fields that name it")
    sandboxed = serializers.BooleanField()


class PaginatedRegistryOut(serializers.Serializer):
    data = RegistryEntryOut(many=True)
    meta = PaginationInfoOut()


class RegistryView(AgentOSView):
    scope_family = "registry"

    @extend_schema(
        operation_id="list_registry", tags=["Registry"], summary="List Registry",
        parameters=[
            query_param("resource_type", "Filter by resource type", enum=RESOURCE_TYPES),
            query_param("name", "Filter by name (partial match, any case)"),
            query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1),
            query_param("limit", "Items per page (1 to 100)", OpenApiTypes.INT, default=20),
        ],
        responses={200: PaginatedRegistryOut, 401: ErrorOut, 403: ErrorOut, 422: ValidationErrorOut},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        window = page(params, max_limit=100)
        wanted = choice(params, "resource_type", RESOURCE_TYPES)
        name = (params.get("name") or "").lower()
        found = [
            entry for entry in registry_entries()
            if (wanted is None or entry["type"] == wanted) and name in entry["name"].lower()
        ]
        return Response(envelope(found[window.offset : window.offset + window.limit], window, len(found)))
