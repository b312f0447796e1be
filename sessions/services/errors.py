"""The sessions services' refusals: a session that is missing, taken, or one too many."""
from __future__ import annotations

from core.errors import DomainError


class SessionNotFound(DomainError):
    """No such session for this caller (missing and someone else's look the same)."""

    status_code, error_code = 404, "session_not_found"
    detail = "Session not found"  # on the wire: AgentOS's words, not the id

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session with id '{session_id}' not found")
        self.session_id = session_id


class SessionExists(Exception):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"Session with id '{session_id}' already exists. Use PATCH /sessions/{session_id} to update it."
        )
        self.session_id = session_id


class SessionLimitReached(DomainError):
    """The owner already holds ``MAX_SESSIONS_PER_USER`` sessions."""

    status_code, error_code = 409, "session_limit_reached"

    def __init__(self, limit: int) -> None:
        super().__init__(f"Session limit reached: a user may hold at most {limit} sessions. Delete some to start new ones.")
        self.limit = limit


__all__ = ["SessionExists", "SessionLimitReached", "SessionNotFound"]
