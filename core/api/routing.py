"""URL helpers: AgentOS tolerates a trailing slash on every route without redirecting."""
from __future__ import annotations

from django.urls import re_path
from django.urls.resolvers import URLPattern

_PARAM = r"(?P<{name}>[^/]+)"


def route(pattern: str, view, name: str | None = None) -> URLPattern:
    """``route("sessions/{session_id}/runs", view)`` matches with or without a trailing slash."""
    regex = pattern
    while "{" in regex:
        start = regex.index("{")
        end = regex.index("}", start)
        regex = regex[:start] + _PARAM.format(name=regex[start + 1 : end]) + regex[end + 1 :]
    return re_path(rf"^{regex}/?$", view, name=name)
