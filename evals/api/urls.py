"""Routes of the /eval-runs family, at the site root (trailing slash optional)."""
from __future__ import annotations

from core.api.routing import route

from .views import EvalRunDetailView, EvalRunsView

urlpatterns = [
    route("eval-runs", EvalRunsView.as_view(), name="eval-runs"),
    route("eval-runs/{eval_run_id}", EvalRunDetailView.as_view(), name="eval-run-detail"),
]
