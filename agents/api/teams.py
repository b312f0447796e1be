"""The /teams family: the agent views (``views.py``), of a team, with its path, scopes,
operation ids and docs."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from sessions.api.serializers.runs import RunOut

from . import schema as docs
from .views import (
    TEAM, AgentDetailView, AgentListView, AgentRunCancelView, AgentRunCheckpointsView, AgentRunCheckpointView,
    AgentRunContinueView, AgentRunDetailView, AgentRunResumeView, AgentRunsView, AgentSessionForkView,
)


class OfATeam:
    """Mixed in before an agent view: the same view, of a team (``team_id``, ``teams`` scopes)."""

    of = TEAM
    scope_family = "teams"
    scope_resource_kwarg = "team_id"


class TeamListView(AgentListView):
    of = TEAM

    @extend_schema(operation_id="get_teams", tags=["Teams"], responses={200: docs.TeamResponse(many=True)})
    def get(self, request):
        return super().get(request)


class TeamDetailView(OfATeam, AgentDetailView):
    @extend_schema(operation_id="get_team", tags=["Teams"], responses={200: docs.TeamResponse, 404: docs.ERROR})
    def get(self, request, **path: str):
        return super().get(request, **path)


class TeamRunsView(OfATeam, AgentRunsView):
    @extend_schema(operation_id="create_team_run", tags=["Teams"], request=docs.RUN_FORMS, responses=docs.TEAM_RUN_RESPONSES)
    async def post(self, request, **path: str):
        return await super().post(request, **path)

    @extend_schema(
        operation_id="list_team_runs", tags=["Teams"],
        parameters=[*docs.IN_SESSION, OpenApiParameter("status", str, description="exact, case-sensitive run status")],
        responses={200: RunOut(many=True), 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    async def get(self, request, **path: str):
        return await super().get(request, **path)


class TeamRunDetailView(OfATeam, AgentRunDetailView):
    @extend_schema(operation_id="get_team_run", tags=["Teams"], parameters=docs.IN_SESSION, responses={200: docs.RunOutput, 404: docs.ERROR, 422: docs.VALIDATION_ERROR})
    def get(self, request, run_id: str, **path: str):
        return super().get(request, run_id, **path)


class TeamRunCheckpointsView(OfATeam, AgentRunCheckpointsView):
    @extend_schema(
        operation_id="list_team_run_checkpoints", tags=["Teams"], parameters=docs.IN_SESSION,
        responses={200: docs.RunCheckpoints, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, **path: str):
        return super().get(request, run_id, **path)


class TeamRunCheckpointView(OfATeam, AgentRunCheckpointView):
    @extend_schema(
        operation_id="get_team_run_checkpoint_snapshot", tags=["Teams"],
        parameters=[OpenApiParameter("message_index", int, OpenApiParameter.PATH), *docs.IN_SESSION],
        responses={200: docs.RunCheckpointSnapshot, 400: docs.ERROR, 404: docs.ERROR, 422: docs.VALIDATION_ERROR},
    )
    def get(self, request, run_id: str, message_index: str, **path: str):
        return super().get(request, run_id, message_index, **path)


class TeamRunCancelView(OfATeam, AgentRunCancelView):
    @extend_schema(
        operation_id="cancel_team_run", tags=["Teams"], request=None, parameters=[OpenApiParameter("session_id", str)],
        responses={200: OpenApiTypes.OBJECT, 400: docs.ERROR, 404: docs.ERROR},
    )
    def post(self, request, run_id: str, **path: str):
        return super().post(request, run_id, **path)


class TeamSessionForkView(OfATeam, AgentSessionForkView):
    @extend_schema(
        operation_id="fork_team_session", tags=["Teams"], request=None,
        parameters=[OpenApiParameter("user_id", str, description="Whose session to fork (ignored, and forced to the caller, under user isolation)")],
        responses={200: docs.ForkedSession, 400: docs.ERROR, 404: docs.ERROR, 409: docs.ERROR},
    )
    def post(self, request, session_id: str, **path: str):
        return super().post(request, session_id, **path)


class TeamRunContinueView(OfATeam, AgentRunContinueView):
    @extend_schema(operation_id="continue_team_run", tags=["Teams"], request=docs.CONTINUE_FORMS, responses=docs.TEAM_RUN_RESPONSES)
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)


class TeamRunResumeView(OfATeam, AgentRunResumeView):
    @extend_schema(
        operation_id="resume_team_run_stream", tags=["Teams"], request={"application/x-www-form-urlencoded": docs.ResumeForm},
        responses={200: OpenApiResponse(description="text/event-stream: replay/catch_up/subscribed frames and team events"), 400: docs.ERROR, 404: docs.ERROR},
    )
    async def post(self, request, run_id: str, **path: str):
        return await super().post(request, run_id, **path)
