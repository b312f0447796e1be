from __future__ import annotations

from core.api.routing import route

from .feedback import RunFeedbackView, SessionFeedbackView

urlpatterns = [
    route("runs/{run_id}/feedback", RunFeedbackView.as_view(), name="chat-run-feedback"),
    route("sessions/{session_id}/feedback", SessionFeedbackView.as_view(), name="chat-session-feedback"),
]
