"""The /components family (AgentOS's component API) over the admin's versioned definitions.

Scopes are AgentOS's: ``components:read`` to read, ``components:write`` to create and edit,
``components:delete`` to archive, restore and discard a draft. Definitions are shared by every
user (nobody owns one), so, as AgentOS treats a shared component, a caller bound to their own
data (user isolation, a browser session, an anonymous guest) may read them and never change
them (403 "Cannot modify shared component"). Drafts follow the run rule: who may not write
components sees published configs only, and a component never published is missing for them.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import BadRequest, Conflict, Forbidden, NotFound, invalid
from core.api.params import boolean, choice, envelope, integer, page
from core.api.schema import ErrorOut, PaginationInfoOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView
from core.auth import Principal
from sessions.api.inputs import json_body

from ..models import Stage
from ..services import components as catalog
from ..services.components import Component, Guard

TAGS = ["Components"]
COMPONENT_TYPES = tuple(catalog.KINDS)
STAGES = tuple(Stage.values)
COMPONENT_ID = OpenApiParameter("component_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="Component ID")
VERSION = OpenApiParameter("version", OpenApiTypes.INT, OpenApiParameter.PATH, description="Version number")
INCLUDE_DELETED = query_param("include_deleted", "Also archived (deleted) components, marked by deleted_at", OpenApiTypes.BOOL, default=False)
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ValidationErrorOut}
# AgentOS's longest component id (its column), and the admin's (the definitions' id columns).
MAX_ID_LENGTH = 128


def writes_components(principal: Principal) -> bool:
    """May this caller change the shared definitions (and so read their drafts)? An admin, and a
    caller acting for everyone (the open server, a token without user isolation); not one bound
    to their own data. The route gate has already required the scope of the operation."""
    if principal.is_admin:
        return True
    return not (principal.isolated or principal.guest or principal.via == "session")


def render_component(component: Component) -> dict[str, Any]:
    """AgentOS's ``ComponentResponse``, its null fields left out (as AgentOS answers)."""
    definition = component.definition
    body: dict[str, Any] = {
        "component_id": component.component_id,
        "component_type": component.kind.name,
        "name": definition.name,
        "description": definition.description or None,
        "current_version": component.current_version,
        "created_at": int(definition.created_at.timestamp()),
        "updated_at": int(definition.updated_at.timestamp()),
        # Archiving is the last change an archived definition had.
        "deleted_at": None if definition.is_active else int(definition.updated_at.timestamp()),
    }
    return {key: value for key, value in body.items() if value is not None}


def render_config(component: Component, version, *, include_config: bool = True) -> dict[str, Any]:
    """AgentOS's ``ComponentConfigResponse``, null fields left out."""
    body: dict[str, Any] = {
        "component_id": component.component_id,
        "version": version.version,
        "stage": version.stage,
        "config": catalog.config_of(component, version) if include_config else None,
        "notes": version.notes or None,
        "created_at": int(version.created_at.timestamp()),
        "updated_at": int(version.published_at.timestamp()) if version.published_at else None,
    }
    return {key: value for key, value in body.items() if value is not None}


# --- output (documentation: the views build these bodies) --------------------------------------

class ComponentOut(serializers.Serializer):
    component_id = serializers.CharField()
    component_type = serializers.ChoiceField(choices=COMPONENT_TYPES)
    name = serializers.CharField(required=False)
    description = serializers.CharField(required=False)
    current_version = serializers.IntegerField(required=False, help_text="The live (newest published) version")
    created_at = serializers.IntegerField(help_text="Unix time, seconds")
    updated_at = serializers.IntegerField(required=False)
    deleted_at = serializers.IntegerField(required=False, help_text="Set while archived")


class ComponentConfigOut(serializers.Serializer):
    component_id = serializers.CharField()
    version = serializers.IntegerField()
    stage = serializers.ChoiceField(choices=STAGES)
    config = serializers.DictField(required=False)
    notes = serializers.CharField(required=False)
    created_at = serializers.IntegerField()
    updated_at = serializers.IntegerField(required=False, help_text="When it was published")


class PaginatedComponentsOut(serializers.Serializer):
    data = ComponentOut(many=True)
    meta = PaginationInfoOut()


# --- input ------------------------------------------------------------------------------------

class GuardIn(serializers.Serializer):
    latest_version = serializers.IntegerField(required=False, allow_null=True, help_text="Expected latest config version")
    current_version = serializers.IntegerField(required=False, allow_null=True, help_text="Expected current (live) version; 0: none yet")


class ComponentCreateIn(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="Display name")
    component_id = serializers.CharField(required=False, allow_null=True, max_length=MAX_ID_LENGTH, help_text="The id clients use; made from the name when absent")
    component_type = serializers.ChoiceField(choices=COMPONENT_TYPES, help_text="agent, team or workflow")
    description = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    metadata = serializers.DictField(required=False, allow_null=True, help_text="Not stored by this server: only null or {}")
    config = serializers.DictField(required=False, allow_null=True, help_text="The first version's fields")
    label = serializers.CharField(required=False, allow_null=True, help_text="Not stored by this server: ignored")
    stage = serializers.ChoiceField(choices=STAGES, default=Stage.DRAFT)
    notes = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    set_current = serializers.BooleanField(default=True, help_text="A published version is always current here (the newest published is live)")


class ComponentUpdateIn(serializers.Serializer):
    name = serializers.CharField(required=False, allow_null=True, max_length=200)
    description = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    component_type = serializers.ChoiceField(choices=COMPONENT_TYPES, required=False, allow_null=True)
    metadata = serializers.DictField(required=False, allow_null=True)
    current_version = serializers.IntegerField(required=False, allow_null=True)
    guard = GuardIn(required=False, allow_null=True)


class ConfigCreateIn(serializers.Serializer):
    config = serializers.DictField(help_text="The version's fields")
    version = serializers.IntegerField(required=False, allow_null=True, help_text="Ignored: the draft's number is the new config's")
    label = serializers.CharField(required=False, allow_null=True)
    stage = serializers.ChoiceField(choices=STAGES, default=Stage.DRAFT)
    notes = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    links = serializers.ListField(child=serializers.DictField(), required=False, allow_null=True, help_text="Not used: members and steps name their components by id")
    set_current = serializers.BooleanField(default=True)
    guard = GuardIn(required=False, allow_null=True)


class ConfigUpdateIn(serializers.Serializer):
    config = serializers.DictField(required=False, allow_null=True)
    label = serializers.CharField(required=False, allow_null=True)
    stage = serializers.ChoiceField(choices=STAGES, required=False, allow_null=True)
    notes = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    links = serializers.ListField(child=serializers.DictField(), required=False, allow_null=True)
    guard = GuardIn(required=False, allow_null=True)


class GuardOnlyIn(serializers.Serializer):
    guard = GuardIn(required=False, allow_null=True)


def _guard(data: dict[str, Any]) -> Guard:
    given = data.get("guard") or {}
    return Guard(latest_version=given.get("latest_version"), current_version=given.get("current_version"))


def _no_metadata(data: dict[str, Any]) -> None:
    if data.get("metadata"):
        raise BadRequest("metadata is not stored by this server: a definition has a name and a description")


def _component_id(data: dict[str, Any]) -> str:
    """The id asked for, or one made from the name as AgentOS makes it (lowercase, runs of
    anything else one hyphen)."""
    given = data.get("component_id")
    if given:
        return given
    slug = "".join(c.lower() if c.isalnum() else "-" for c in data["name"].strip())
    while "--" in slug:
        slug = slug.replace("--", "-")
    return (slug.strip("-") or "component")[:MAX_ID_LENGTH]


def _version(raw: str) -> int:
    """The path's version: an integer, as AgentOS's path parameter (else its 422)."""
    try:
        return int(raw)
    except ValueError:
        raise invalid(["path", "version"], "Input should be a valid integer, unable to parse string as an integer", kind="int_parsing", value=raw) from None


def _optional_body(request: Request) -> dict[str, Any]:
    return json_body(request, GuardOnlyIn, required=False)


# --- views ------------------------------------------------------------------------------------

class ComponentsAPIView(AgentOSView):
    scope_family = "components"

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, (catalog.ComponentMissing, catalog.ConfigMissing)):
            exc = NotFound(str(exc))
        elif isinstance(exc, catalog.ComponentConflict):
            exc = Conflict(str(exc))
        elif isinstance(exc, catalog.ComponentInvalid):
            exc = BadRequest(str(exc))
        return super().handle_exception(exc)

    @property
    def writer(self) -> bool:
        return writes_components(self.principal)

    def require_writer(self, verb: str = "modify") -> None:
        if not self.writer:
            raise Forbidden(f"Cannot {verb} shared component")

    def reread(self, component: Component) -> Component:
        """The component as a write left it (a writer's read)."""
        return catalog.component_get(component_id=component.component_id, include_archived=True)

    def component(self, component_id: str, *, include_archived: bool = False) -> Component:
        """The component as this caller may see it (one they may not is missing, never refused)."""
        writer = self.writer
        return catalog.component_get(component_id=component_id, include_archived=include_archived and writer, published_only=not writer)


class ComponentsView(ComponentsAPIView):
    @extend_schema(
        operation_id="list_components", tags=TAGS, summary="List Components",
        parameters=[
            query_param("component_type", "Filter by type: agent, team, workflow", enum=COMPONENT_TYPES),
            query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1),
            query_param("limit", "Items per page (1 to 100)", OpenApiTypes.INT, default=20),
            INCLUDE_DELETED,
        ],
        responses={200: PaginatedComponentsOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        window = page(params, max_limit=100)
        writer = self.writer
        found = catalog.component_list(
            kind=choice(params, "component_type", COMPONENT_TYPES),
            include_archived=writer and boolean(params, "include_deleted", False),
            published_only=not writer,
        )
        shown = found[window.offset : window.offset + window.limit]
        return Response(envelope([render_component(component) for component in shown], window, len(found)))

    @extend_schema(operation_id="create_component", tags=TAGS, summary="Create Component", request=ComponentCreateIn, responses={201: ComponentOut, **ERRORS})
    def post(self, request: Request) -> Response:
        self.require_writer("create")
        data = json_body(request, ComponentCreateIn)
        _no_metadata(data)
        component = catalog.component_create(
            kind=data["component_type"], component_id=_component_id(data), name=data["name"], description=data.get("description") or "",
            config=data.get("config") or {}, stage=data["stage"], notes=data.get("notes"),
        )
        return Response(render_component(component), status=201)


class ComponentDetailView(ComponentsAPIView):
    @extend_schema(operation_id="get_component", tags=TAGS, summary="Get Component", parameters=[COMPONENT_ID, INCLUDE_DELETED], responses={200: ComponentOut, **ERRORS})
    def get(self, request: Request, component_id: str) -> Response:
        include = boolean(request.query_params, "include_deleted", False)
        return Response(render_component(self.component(component_id, include_archived=include)))

    @extend_schema(operation_id="update_component", tags=TAGS, summary="Update Component", parameters=[COMPONENT_ID], request=ComponentUpdateIn, responses={200: ComponentOut, **ERRORS})
    def patch(self, request: Request, component_id: str) -> Response:
        component = self.component(component_id)
        self.require_writer()
        data = json_body(request, ComponentUpdateIn)
        _no_metadata(data)
        if data.get("component_type") not in (None, component.kind.name):
            raise BadRequest(f"Component {component_id} is a {component.kind.name}: its type cannot change")
        guard = _guard(data)
        if data.get("current_version") is not None:
            catalog.config_set_current(component=component, version=data["current_version"], guard=guard)
            guard = catalog.NO_GUARD  # checked, before the pointer moved
        catalog.component_update(component=component, name=data.get("name"), description=data.get("description"), guard=guard)
        return Response(render_component(self.reread(component)))

    @extend_schema(
        operation_id="delete_component", tags=TAGS, summary="Delete Component",
        parameters=[COMPONENT_ID, query_param("expected_current_version", "Refuse (409) unless this is the current version", OpenApiTypes.INT)],
        request=GuardOnlyIn, responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, component_id: str) -> Response:
        component = self.component(component_id)
        self.require_writer("delete")
        expected = integer(request.query_params, "expected_current_version")
        in_body = _guard(_optional_body(request))
        if in_body.latest_version is not None:
            raise BadRequest("This route checks guard.current_version only; guard.latest_version is not honoured here. Remove it, or use the route that enforces it.")
        if None not in (expected, in_body.current_version) and expected != in_body.current_version:
            raise BadRequest("Conflicting guards: expected_current_version query param and guard.current_version disagree. Send one.")
        current = expected if expected is not None else in_body.current_version
        catalog.component_archive(component=component, guard=Guard(current_version=current))
        return Response(status=204)


class ComponentRestoreView(ComponentsAPIView):
    scope_actions = {"POST": "delete"}  # AgentOS: restoring is undoing a delete

    @extend_schema(operation_id="restore_component", tags=TAGS, summary="Restore Component", parameters=[COMPONENT_ID], request=None, responses={200: ComponentOut, **ERRORS})
    def post(self, request: Request, component_id: str) -> Response:
        component = self.component(component_id, include_archived=True)
        self.require_writer()
        catalog.component_restore(component=component)
        return Response(render_component(self.reread(component)))


class ConfigsView(ComponentsAPIView):
    @extend_schema(
        operation_id="list_configs", tags=TAGS, summary="List Configs",
        parameters=[COMPONENT_ID, query_param("include_config", "Include each version's config", OpenApiTypes.BOOL, default=True)],
        responses={200: ComponentConfigOut(many=True), **ERRORS},
    )
    def get(self, request: Request, component_id: str) -> Response:
        component = self.component(component_id)
        include = boolean(request.query_params, "include_config", True)
        versions = catalog.config_list(component=component, published_only=not self.writer)
        return Response([render_config(component, version, include_config=include) for version in versions])

    @extend_schema(operation_id="create_config", tags=TAGS, summary="Create Config Version", parameters=[COMPONENT_ID], request=ConfigCreateIn, responses={201: ComponentConfigOut, **ERRORS})
    def post(self, request: Request, component_id: str) -> Response:
        component = self.component(component_id)
        self.require_writer()
        data = json_body(request, ConfigCreateIn)
        version = catalog.config_create(component=component, config=data["config"], stage=data["stage"], notes=data.get("notes"), guard=_guard(data))
        return Response(render_config(component, version), status=201)


class CurrentConfigView(ComponentsAPIView):
    @extend_schema(operation_id="get_current_config", tags=TAGS, summary="Get Current Config", parameters=[COMPONENT_ID], responses={200: ComponentConfigOut, **ERRORS})
    def get(self, request: Request, component_id: str) -> Response:
        component = self.component(component_id)
        return Response(render_config(component, catalog.config_current(component=component)))


class ConfigDetailView(ComponentsAPIView):
    @extend_schema(operation_id="get_config", tags=TAGS, summary="Get Config Version", parameters=[COMPONENT_ID, VERSION], responses={200: ComponentConfigOut, **ERRORS})
    def get(self, request: Request, component_id: str, version: str) -> Response:
        component = self.component(component_id)
        found = catalog.config_get(component=component, version=_version(version), published_only=not self.writer)
        return Response(render_config(component, found))

    @extend_schema(operation_id="update_config", tags=TAGS, summary="Update Draft Config", parameters=[COMPONENT_ID, VERSION], request=ConfigUpdateIn, responses={200: ComponentConfigOut, **ERRORS})
    def patch(self, request: Request, component_id: str, version: str) -> Response:
        number = _version(version)
        component = self.component(component_id)
        self.require_writer()
        data = json_body(request, ConfigUpdateIn)
        found = catalog.config_update(component=component, version=number, config=data.get("config"), stage=data.get("stage"), notes=data.get("notes"), guard=_guard(data))
        return Response(render_config(component, found))

    @extend_schema(operation_id="delete_config", tags=TAGS, summary="Delete Config Version", parameters=[COMPONENT_ID, VERSION], request=None, responses={204: None, **ERRORS})
    def delete(self, request: Request, component_id: str, version: str) -> Response:
        number = _version(version)
        component = self.component(component_id)
        self.require_writer("delete")
        catalog.config_delete(component=component, version=number)
        return Response(status=204)


class SetCurrentConfigView(ComponentsAPIView):
    @extend_schema(operation_id="set_current_config", tags=TAGS, summary="Set Current Config Version", parameters=[COMPONENT_ID, VERSION], request=GuardOnlyIn, responses={200: ComponentOut, **ERRORS})
    def post(self, request: Request, component_id: str, version: str) -> Response:
        number = _version(version)
        component = self.component(component_id)
        self.require_writer()
        guard = _guard(_optional_body(request))
        if guard.latest_version is not None:
            raise BadRequest("This route checks guard.current_version only; guard.latest_version is not honoured here. Remove it, or use the route that enforces it.")
        catalog.config_set_current(component=component, version=number, guard=guard)
        return Response(render_component(self.reread(component)))
