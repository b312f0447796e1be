"""The knowledge services every surface (API, chat, admin, agents, commands) calls."""
from __future__ import annotations

from .bases import base_get_by_name, base_get_for_user, base_get_or_create, base_list_for_user
from .config import content_status_for_user, knowledge_config
from .contents import (
    ContentInputError,
    Inserted,
    content_delete,
    content_delete_all,
    content_get_for_user,
    content_insert,
    content_list_for_user,
    content_passages_for_user,
    content_refresh,
    content_update,
)
from .reembed import base_reembed
from .search import SearchError, SearchHit, knowledge_search
from .source import BaseSource

__all__ = [
    "BaseSource", "ContentInputError", "Inserted", "SearchError", "SearchHit",
    "base_get_by_name", "base_get_for_user", "base_get_or_create", "base_list_for_user", "base_reembed",
    "content_delete", "content_delete_all", "content_get_for_user", "content_insert", "content_list_for_user", "content_passages_for_user",
    "content_refresh", "content_status_for_user", "content_update", "knowledge_config", "knowledge_search",
]
