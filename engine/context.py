"""What a run gets from its caller: ``RunContext`` and the small storage protocols.

The runtime never reads storage itself. The Django services load history, memories and session
state, pass them in here, and implement these protocols over the ORM.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from engine.workflow_branches import ParallelBranches


@runtime_checkable
class MemoryStore(Protocol):
    """Where the memory manager writes the user's memories (scoped to the run's user by the caller).

    ``add`` and ``update`` return the stored memory dict (``{memory_id, memory, topics, ...}``).
    """

    def add(self, memory: str, topics: list[str], input: str) -> dict[str, Any]: ...

    def update(self, memory_id: str, memory: str, topics: list[str]) -> dict[str, Any]: ...

    def delete(self, memory_id: str) -> None: ...


@runtime_checkable
class PastSessions(Protocol):
    """The user's other sessions, newest first, for ``search_past_sessions``.

    Returns RunOutput dicts (at most ``num_runs_per_session`` per session, each carrying its
    ``session_id``), from at most ``num_sessions`` sessions other than the current one.
    """

    def recent_runs(self, num_sessions: int, num_runs_per_session: int) -> list[dict[str, Any]]: ...


@runtime_checkable
class Retriever(Protocol):
    """Knowledge search, exposed to the model as the ``search_knowledge_base`` tool."""

    def search(self, query: str, limit: int) -> list[dict[str, Any]]: ...


@dataclass
class RunContext:
    """Everything about one run that is not agent configuration.

    ``history``: earlier runs' RunOutput dicts of this session, oldest first, already limited to
    the agent's ``num_history_runs`` by the caller. ``memories``: the user's memory dicts
    (``{memory_id, memory, topics}``). ``session_state``: the stored state of the session (``None``
    = nothing stored; the agent's default state fills in missing keys). ``session_summary``: the
    stored summary dict (``{summary, topics, updated_at}``) or ``None``. ``is_cancelled`` is polled
    between steps, on the run's event loop: it must not block, and may return an awaitable (a
    check that needs I/O). ``clock`` gives epoch seconds (every timestamp and duration comes from
    it) and ``sleep`` is used for retry backoff (sync or async); both are injectable for tests.
    """

    run_id: str
    session_id: str
    user_id: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    session_state: dict[str, Any] | None = None
    session_summary: dict[str, Any] | None = None
    memory_store: MemoryStore | None = None
    # The user's learned profile (engine.learning, an agent with learning on): in the system prompt.
    learned_profile: dict[str, Any] | None = None
    past_sessions: PastSessions | None = None
    retriever: Retriever | None = None
    is_cancelled: Callable[[], bool | Awaitable[bool]] = lambda: False
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], Awaitable[None] | None] = asyncio.sleep
    dependencies: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    # The run's ``knowledge_filters`` (a caller's), merged over the agent's own for every search.
    knowledge_filters: Mapping[str, Any] | None = None
    # False when nobody follows the text as it arrives (a non-streamed run): providers may then
    # answer in one piece, which costs less than a chunk per token.
    incremental: bool = True
    # A workflow run's Parallel branches run as separate work through this (the background
    # path's jobs, engine.workflow_branches); None: as tasks of the run itself.
    parallel_branches: ParallelBranches | None = None
    # Who started the run (a core.auth.Principal; None: a run started outside the pipeline). A
    # tool that starts or stores work (the schedules toolkit) acts with it, never with more; a
    # team's members and a workflow's steps carry their parent's.
    principal: Any = None

    def child(self, *, run_id: str, history: list[dict[str, Any]], session_state: dict[str, Any]) -> RunContext:
        """The context of a run inside this one (a team's member, a workflow's agent or team
        step): this run's session, user, cancellation, clock, stores and principal, with its own
        run id, history and copy of the session state. The session summary, learned profile and
        Parallel branches stay the parent's: they describe or serve the parent run."""
        return RunContext(
            run_id=run_id,
            session_id=self.session_id,
            user_id=self.user_id,
            history=history,
            memories=list(self.memories),
            session_state=session_state,
            memory_store=self.memory_store,
            past_sessions=self.past_sessions,
            retriever=self.retriever,
            knowledge_filters=self.knowledge_filters,
            is_cancelled=self.is_cancelled,
            clock=self.clock,
            sleep=self.sleep,
            dependencies=self.dependencies,
            metadata=self.metadata,
            incremental=self.incremental,
            principal=self.principal,
        )
