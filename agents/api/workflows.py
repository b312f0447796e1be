"""The /workflows family: the agent views (``views.py``), of a workflow, with its path, scopes,
operation ids and docs (a workflow has no checkpoints or forks, as in AgentOS)."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from core.api import params
from core.api.errors import NotFound
from sessions.api.serializers.runs import RunOut

from . import schema as docs
from .views import (
    WORKFLOW, AgentDetailView, AgentListView, AgentRunCancelView, AgentRunContinueView, AgentRunDetailView,
    AgentRunResumeView, AgentRunsView,
)


class OfAWorkflow:
    """Mixed in before an agent view: the same view, of a workflow (``workflow_id``, ``workflows`` scopes)."""

    of = WORKFLOW
    scope_family = "workflows"
    scope_resource_kwarg = "workflow_id"


# AgentOS's input for a workflow factory: no workflow of this server is one, so it is ignored.
_FACTORY_INPUT = OpenApiParameter("factory_input", str, description="A JSON object a factory-built workflow is built from (ignored by the others)")
_WORKFLOW_RUN_RESPONSES = {
    **docs.TEAM_RUN_RESPONSES,
    200: OpenApiResponse(docs.RunOutput, description="stream=false: the WorkflowRunOutput (step_results, step_executor_runs); stream=true (the default): text/event-stream of workflow, step and executor events"),
}


class WorkflowListView(AgentListView):
    of = WORKFLOW

    @extend_schema(operation_id="get_workflows", tags=["Workflows"], responses={200: docs.WorkflowSummary(many=True)})
    def get(self, request):
        return super().get(request)


class WorkflowDetailView(OfAWorkflow, AgentDetailView):
    @extend_schema(
        operation_id="get_workflow", tags=["Workflows"],
        parameters=[OpenApiParameter("version", int, description="A stored version (code workflows have none: not found)")],
        responses={200: docs.WorkflowResponse, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, **path: str):
        entry = self.of.get(self.component_id, params.integer(request.query_params, "version", None, minimum=1))
        if entry is None:
            raise NotFound("Workflow not found")
        return Response(self.of.present(entry))


class WorkflowRunsView(OfAWorkflow, AgentRunsView):
    @extend_schema(operation_id="create_workflow_run", tags=["Workflows"], request=docs.RUN_FORMS, responses=_WORKFLOW_RUN_RESPONSES)
    async def post(self, request, **path: str):
        return await super().post(request, **path)

    @extend_schema(
        operation_id="list_workflow_runs", tags=["Workflows"],
        parameters=[
            *docs.IN_SESSION, OpenApiParameter("status", str, description="exact, case-sensitive run status"),
            _FACTORY_INPUT,
        ],
        responses={200: RunOut(many=True), 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    async def get(self, request, **path: str):
        return await super().get(request, **path)


class WorkflowRunDetailView(OfAWorkflow, AgentRunDetailView):
    @extend_schema(operation_id="get_workflow_run", tags=["Workflows"], parameters=[*docs.IN_SESSION, _FACTORY_INPUT], responses={200: docs.RunOutput, 404: docs.ERROR, 422: docs.VALIDATION_ERROR})
    def get(self, request, run_id: str, **path: str):
        return super().get(request, run_id, **path)


class WorkflowRunCancelView(OfAWorkflow, AgentRunCancelView):
    @extend_schema(
        operation_id="cancel_workflow_run", tags=["Workflows"], request=None, parameters=[OpenApiParameter("session_id", str)],
        responses={200: OpenApiTypes.OBJECT, 400: docs.ERROR, 404: docs.ERROR},
    )
    def post(self, request, run_id: str, **path: str):
        return super().post(request, run_id, **path)


class WorkflowRunContinueView(OfAWorkflow, AgentRunContinueView):
    @extend_schema(
        operation_id="continue_workflow_run", tags=["Workflows"],
        request={"application/x-www-form-urlencoded": docs.WorkflowContinueForm, "multipart/form-data": docs.WorkflowContinueForm},
        responses=_WORKFLOW_RUN_RESPONSES,
    )
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)


class WorkflowRunResumeView(OfAWorkflow, AgentRunResumeView):
    @extend_schema(
        operation_id="resume_workflow_run_stream", tags=["Workflows"], request={"application/x-www-form-urlencoded": docs.ResumeForm},
        responses={200: OpenApiResponse(description="text/event-stream: replay/catch_up/subscribed frames and workflow events"), 400: docs.ERROR, 404: docs.ERROR},
    )
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)
