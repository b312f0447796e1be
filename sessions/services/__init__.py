"""Writes to sessions, runs, run events and memories (see runs.py and memories.py)."""
from .memories import memory_create, memory_delete, memory_topics_key, memory_update
from .runs import (
    RunStatusConflict,
    SessionExists,
    SessionNotFound,
    new_id,
    run_create,
    run_events_append,
    run_transition,
    session_add_usage,
    session_create,
    session_get_for_update,
    session_get_or_create,
)

__all__ = [
    "RunStatusConflict",
    "SessionExists",
    "SessionNotFound",
    "memory_create",
    "memory_delete",
    "memory_topics_key",
    "memory_update",
    "new_id",
    "run_create",
    "run_events_append",
    "run_transition",
    "session_add_usage",
    "session_create",
    "session_get_for_update",
    "session_get_or_create",
]
