from core.api.routing import route

from . import views

urlpatterns = [
    route("agents", views.AgentListView.as_view(), name="agents"),
    route("agents/{agent_id}", views.AgentDetailView.as_view(), name="agent"),
    route("agents/{agent_id}/runs", views.AgentRunsView.as_view(), name="agent-runs"),
    route("agents/{agent_id}/runs/{run_id}", views.AgentRunDetailView.as_view(), name="agent-run"),
    route("agents/{agent_id}/runs/{run_id}/cancel", views.AgentRunCancelView.as_view(), name="agent-run-cancel"),
    route("agents/{agent_id}/runs/{run_id}/continue", views.AgentRunContinueView.as_view(), name="agent-run-continue"),
    route("agents/{agent_id}/runs/{run_id}/resume", views.AgentRunResumeView.as_view(), name="agent-run-resume"),
    route("agents/{agent_id}/runs/{run_id}/checkpoints", views.AgentRunCheckpointsView.as_view(), name="agent-run-checkpoints"),
    route("agents/{agent_id}/runs/{run_id}/checkpoints/{message_index}", views.AgentRunCheckpointView.as_view(), name="agent-run-checkpoint"),
    route("agents/{agent_id}/sessions/{session_id}/fork", views.AgentSessionForkView.as_view(), name="agent-session-fork"),
    route("agents/{agent_id}/sessions/{session_id}/compact", views.AgentSessionCompactView.as_view(), name="agent-session-compact"),
    route("teams", views.TeamListView.as_view(), name="teams"),
    route("teams/{team_id}", views.TeamDetailView.as_view(), name="team"),
    route("teams/{team_id}/runs", views.TeamRunsView.as_view(), name="team-runs"),
    route("teams/{team_id}/runs/{run_id}", views.TeamRunDetailView.as_view(), name="team-run"),
    route("teams/{team_id}/runs/{run_id}/cancel", views.TeamRunCancelView.as_view(), name="team-run-cancel"),
    route("teams/{team_id}/runs/{run_id}/continue", views.TeamRunContinueView.as_view(), name="team-run-continue"),
    route("teams/{team_id}/runs/{run_id}/resume", views.TeamRunResumeView.as_view(), name="team-run-resume"),
    route("teams/{team_id}/runs/{run_id}/checkpoints", views.TeamRunCheckpointsView.as_view(), name="team-run-checkpoints"),
    route("teams/{team_id}/runs/{run_id}/checkpoints/{message_index}", views.TeamRunCheckpointView.as_view(), name="team-run-checkpoint"),
    route("teams/{team_id}/sessions/{session_id}/fork", views.TeamSessionForkView.as_view(), name="team-session-fork"),
    route("workflows", views.WorkflowListView.as_view(), name="workflows"),
    route("workflows/{workflow_id}", views.WorkflowDetailView.as_view(), name="workflow"),
    route("workflows/{workflow_id}/runs", views.WorkflowRunsView.as_view(), name="workflow-runs"),
    route("workflows/{workflow_id}/runs/{run_id}", views.WorkflowRunDetailView.as_view(), name="workflow-run"),
    route("workflows/{workflow_id}/runs/{run_id}/cancel", views.WorkflowRunCancelView.as_view(), name="workflow-run-cancel"),
    route("workflows/{workflow_id}/runs/{run_id}/continue", views.WorkflowRunContinueView.as_view(), name="workflow-run-continue"),
    route("workflows/{workflow_id}/runs/{run_id}/resume", views.WorkflowRunResumeView.as_view(), name="workflow-run-resume"),
]
