"""Server-sent events framed exactly as AgentOS frames them."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def event_frame(event: Mapping[str, Any]) -> str:
    """A run event: ``event:`` line, one compact ``data:`` line, blank line."""
    return f"event: {event.get('event', 'message')}\ndata: {json.dumps(event, separators=(',', ':'), default=str)}\n\n"


def control_frame(name: str, data: Mapping[str, Any]) -> str:
    """Control frames (replay, catch_up, subscribed, error...) use json.dumps' default spacing."""
    return f"event: {name}\ndata: {json.dumps({'event': name, **data}, default=str)}\n\n"


SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
