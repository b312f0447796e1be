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
]
