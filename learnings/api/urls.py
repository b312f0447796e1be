"""Routes of the /learnings family (``users`` before ``{learning_id}``, as AgentOS orders them)."""
from __future__ import annotations

from core.api.routing import route

from .views import LearningDetailView, LearningsView, LearningUsersView, LearningUserView

urlpatterns = [
    route("learnings", LearningsView.as_view(), name="learnings"),
    route("learnings/users", LearningUsersView.as_view(), name="learning-users"),
    route("learnings/users/{user_id}", LearningUserView.as_view(), name="learning-user"),
    route("learnings/{learning_id}", LearningDetailView.as_view(), name="learning-detail"),
]
