"""Routes of the /knowledge family, at the site root (trailing slash optional). ``config`` and
``search`` come before ``{knowledge_id}/...``, as in AgentOS."""
from __future__ import annotations

from core.api.routing import route

from .views import (
    ConfigView,
    ContentDetailView,
    ContentRefreshView,
    ContentStatusView,
    ContentsView,
    RemoteContentView,
    SearchView,
    SourceFilesView,
    SourcesView,
)

urlpatterns = [
    route("knowledge/content", ContentsView.as_view(), name="knowledge-contents"),
    route("knowledge/remote-content", RemoteContentView.as_view(), name="knowledge-remote-content"),
    route("knowledge/content/{content_id}", ContentDetailView.as_view(), name="knowledge-content"),
    route("knowledge/content/{content_id}/refresh", ContentRefreshView.as_view(), name="knowledge-content-refresh"),
    route("knowledge/content/{content_id}/status", ContentStatusView.as_view(), name="knowledge-content-status"),
    route("knowledge/search", SearchView.as_view(), name="knowledge-search"),
    route("knowledge/config", ConfigView.as_view(), name="knowledge-config"),
    route("knowledge/{knowledge_id}/sources", SourcesView.as_view(), name="knowledge-sources"),
    route("knowledge/{knowledge_id}/sources/{source_id}/files", SourceFilesView.as_view(), name="knowledge-source-files"),
]
