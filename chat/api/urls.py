from __future__ import annotations

from core.api.routing import route

from .branches import SessionBranchView
from .feedback import RunFeedbackView, SessionFeedbackView
from .schedules import SchedulePreviewView
from .shares import SessionShareView

urlpatterns = [
    route("runs/{run_id}/feedback", RunFeedbackView.as_view(), name="chat-run-feedback"),
    route("sessions/{session_id}/feedback", SessionFeedbackView.as_view(), name="chat-session-feedback"),
    route("sessions/{session_id}/share", SessionShareView.as_view(), name="chat-session-share"),
    route("sessions/{session_id}/branch", SessionBranchView.as_view(), name="chat-session-branch"),
    route("schedules/preview", SchedulePreviewView.as_view(), name="chat-schedule-preview"),
]
