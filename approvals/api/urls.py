"""Routes of the /approvals family, at the site root (trailing slash optional). ``count`` comes
before ``{approval_id}``, as in AgentOS."""
from __future__ import annotations

from core.api.routing import route

from .views import ApprovalCountView, ApprovalDetailView, ApprovalResolveView, ApprovalStatusView, ApprovalsView

urlpatterns = [
    route("approvals", ApprovalsView.as_view(), name="approvals"),
    route("approvals/count", ApprovalCountView.as_view(), name="approval-count"),
    route("approvals/{approval_id}", ApprovalDetailView.as_view(), name="approval-detail"),
    route("approvals/{approval_id}/status", ApprovalStatusView.as_view(), name="approval-status"),
    route("approvals/{approval_id}/resolve", ApprovalResolveView.as_view(), name="approval-resolve"),
]
