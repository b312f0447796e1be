"""Running an agent, a team or a workflow for a user: what a run is, and how it is prepared.

Teams and workflows are more component kinds on the same path: ``PreparedRun.component`` is the
runtime component (an ``Agent``, a ``Team`` or a ``Workflow``, which share the run protocol),
looked up by kind (``component_entry``); a team run's member runs and a workflow run's agent and
team steps are written as its child rows.

``run_prepare`` does the reads (component, session ownership, history, memories) and builds the
runtime context; ``run_begin`` commits the run RUNNING with its input. Executing it is
``agents.pipeline.execution`` (one async execute, and its sync facade); continuing a paused or
finished run is ``agents.pipeline.continuation``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from core.auth import Principal
from core.errors import DomainError
from core.statements import Select
from core.tenancy import in_scope, scope_queryset
from sessions.models import Run, RunOrigin, RunStatus, Session
from sessions.selectors import run_history
from sessions.services.runs import RunRecord, SessionNotFound, new_id, run_record, run_transition

from ..registry import AgentEntry, TeamEntry, WorkflowEntry
from engine import Agent, InvalidContinuation, RunContext, Team, Workflow
from engine.factory import FactoryContext
from engine.structured import OutputSchema
from .authority import ComponentNotFound, RunForbidden, component_entry, component_entry_pinned, run_authorize
from jobs.services.cancellation import cancel_checker, cancel_request
from .context import BufferedMemoryStore, StoredPastSessions, memories_for_context
from learnings.services import LearnedMemoryBuffer
from jobs.services.jobs import job_cancel

Entry = AgentEntry | TeamEntry | WorkflowEntry  # a registered component (agents.registry)
Component = Agent | Team | Workflow  # what runs: one run protocol (engine)


class RunNotFound(DomainError):
    status_code, error_code = 404, "run_not_found"

    def __init__(self) -> None:
        super().__init__("Run not found")


class RunNotContinuable(DomainError):
    """A 409: the run is not in a state to go on (not paused, being continued, part of another run)."""

    status_code, error_code = 409, "run_not_continuable"


@dataclass
class RunRequest:
    """What a caller asks for, transport-neutral (form fields, chat messages, schedules)."""

    message: str
    session_id: str | None = None
    user_id: str | None = None
    stream: bool = True
    stream_events: bool = True
    session_state: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    dependencies: dict[str, Any] | None = None
    knowledge_filters: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    add_history_to_context: bool | None = None
    images: list[dict[str, Any]] | None = None
    files: list[dict[str, Any]] | None = None
    version: int | None = None
    # Where the run comes from (RunOrigin); the submit service fills it in when the caller did not.
    origin: str | None = None
    # What a factory-built component is built from besides the run's context (runtime.factory).
    factory_input: dict[str, Any] | None = None

    def stored_input(self) -> dict[str, Any]:
        """What the run row keeps of what the caller sent (AgentOS's RunInput)."""
        return {"input_content": self.message, **({"images": self.images} if self.images else {}), **({"files": self.files} if self.files else {})}


@dataclass
class PreparedRun:
    entry: Entry
    component: Component  # the component that runs: an agent, a team or a workflow
    run_id: str
    session_id: str
    owner_id: str | None
    new_session: bool
    ctx: RunContext
    memory_store: BufferedMemoryStore | LearnedMemoryBuffer | None
    started_at: datetime
    request: RunRequest | None = None
    # Set for continuations: the stored run being resumed.
    continued: Run | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)
    first_event_index: int = 0
    # Set when a continuation runs the loop again from a message boundary (Continuation).
    branch: dict[str, Any] | None = None
    replaces: str | None = None  # the run a regeneration marks REGENERATED once it completes
    streamed: bool = True  # someone follows it token by token (its stored events keep every delta)
    stream_events: bool = True

    @property
    def continues_in_place(self) -> bool:
        """A continuation under the continued run's own id (a paused run, or a failed one retried)."""
        return self.continued is not None and self.run_id == self.continued.pk

    def iterate(self) -> Any:
        """The runtime's run iterator for this run, not yet started."""
        if self.branch is not None:
            assert self.continued is not None
            return self.component.branch_run(self.continued.run_data, self.ctx, **self.branch)
        if self.continued is not None:
            return resumed(self.component, self.continued.run_data, self.decisions, self.ctx, self.stream_events)
        request = self.request
        assert request is not None
        if isinstance(self.component, Workflow):
            return self.component.start_run(request.message, self.ctx, stream_events=request.stream_events)
        return self.component.start_run(request.message, self.ctx, stream_events=request.stream_events, images=request.images, files=request.files)

    @property
    def origin(self) -> str:
        """Where the run comes from: its request's, or for a continuation its source run's."""
        if self.request is not None and self.request.origin:
            return self.request.origin
        return self.continued.origin if self.continued is not None else RunOrigin.API

    @property
    def redoes(self) -> Run | None:
        """The run whose place this one takes on its branch: the source of an edit or a regeneration."""
        return self.continued if self.branch is not None and self.branch["fork"] else None

    def record(self, **fields: Any) -> RunRecord:
        """This run as the sessions service writes it (``fields``: status, output, events, ...)."""
        output = fields.get("output") or {}
        return RunRecord(
            run_id=self.run_id, session_id=self.session_id, owner_id=self.owner_id, component_id=self.component.id,
            session_type=self.entry.session_type, component_data=_component_data(self.component), started_at=self.started_at,
            children=member_records(output, session_id=self.session_id, owner_id=self.owner_id), origin=self.origin,
            redoes=self.redoes, **fields,
        )


def resumed(component: Component, run_data: Mapping[str, Any], decisions: list[dict[str, Any]], ctx: RunContext, stream_events: bool) -> Any:
    """The runtime's continuation of a paused run with the human's decisions: tool decisions for
    an agent or a team, step requirements for a workflow. Bad decisions raise InvalidContinuation."""
    if isinstance(component, Workflow):
        return component.continue_run(run_data, ctx=ctx, step_requirements=decisions, stream_events=stream_events)
    return component.continue_run(run_data, tools=decisions, ctx=ctx, stream_events=stream_events)


def member_records(output: Mapping[str, Any], *, session_id: str, owner_id: str | None) -> list[RunRecord]:
    """The runs made inside a run as its child rows: a team's members (``member_responses``) and a
    workflow's agent and team steps (``step_executor_runs``), recursively; each its own run, of its
    component's id and kind, with no events of its own (they are in the parent's stream, nested)."""
    records = []
    members = [(member, RunOrigin.TEAM_MEMBER) for member in output.get("member_responses") or []]
    members += [(step, RunOrigin.WORKFLOW_STEP) for step in output.get("step_executor_runs") or []]
    for member, origin in members:
        is_team = "team_id" in member
        member_input = member.get("input") or {}
        records.append(RunRecord(
            run_id=member["run_id"], session_id=session_id, owner_id=owner_id,
            component_id=str(member.get("team_id") if is_team else member.get("agent_id") or ""),
            status=str(member.get("status") or RunStatus.ERROR), output=member,
            input={"input_content": member_input.get("input_content")} if isinstance(member_input, Mapping) else {},
            session_type="team" if is_team else "agent", parent_run_id=output.get("run_id"), origin=origin,
            children=member_records(member, session_id=session_id, owner_id=owner_id),
        ))
    return records


# Tool decisions and a continuation from a boundary are two different requests.
DECISIONS_WITH_BRANCH = (
    "Tool decisions continue a paused run as it stands: fork, regenerate, continue_from and input cannot be combined with them"
)


@dataclass(frozen=True)
class Continuation:
    """Where a continue request picks a run up (Agno v3's unified continue).

    The default is the classic human-in-the-loop continue of a paused run. Otherwise the model
    loop runs again on the run's transcript, cut at ``continue_from`` ("end", "last_user" or a
    message index), with ``input`` as a new user message: a finished run (or ``fork``) gives a
    new run beside it, a failed one is retried under its own id. ``regenerate`` re-answers the
    last question in a new run and, unless ``replace_original`` is False, marks the original
    REGENERATED once the new answer is complete (history then skips it).
    """

    continue_from: str | int = "end"
    fork: bool = False
    regenerate: bool = False
    replace_original: bool | None = None
    input: str | None = None
    # What a factory-built component is built from again (AgentOS's continue takes it too).
    factory_input: dict[str, Any] | None = None

    @property
    def plain(self) -> bool:
        return self.continue_from == "end" and not (self.fork or self.regenerate or self.input)



def component_entry_for(*, principal: Principal, component_id: str, kind: str, version: int | None) -> Entry:
    """What ``principal`` may run: the one authority's answer (agents.pipeline.authority)."""
    return run_authorize(principal, kind, component_id, version=version)


def component_for(
    entry: Entry, owner_id: str | None, request: RunRequest | None, *, session_id: str | None = None,
    session_state: Mapping[str, Any] | None = None, factory_input: Mapping[str, Any] | None = None,
) -> Component:
    """The component for one run: built for its owner, and, for a factory, from the run's
    session, state, dependencies and ``factory_input`` too."""
    component = entry.build_for(FactoryContext(
        user_id=owner_id, session_id=session_id, session_state=session_state,
        dependencies=request.dependencies if request is not None else None,
        input=request.factory_input if request is not None else factory_input,
    ))
    overrides: dict[str, Any] = {}
    if request is not None and request.output_schema is not None and not isinstance(component, Workflow):
        overrides["output_schema"] = request.output_schema
        overrides["output_schema_spec"] = OutputSchema.of(request.output_schema)
    if request is not None and request.add_history_to_context is not None:
        overrides["add_history_to_context"] = request.add_history_to_context
    if overrides:
        # Per-request options must not leak into a shared code agent: change a copy.
        component = component.with_options(**overrides)
    return component


def context_for_run(
    *,
    component: Component,
    run_id: str,
    session: Session | None,
    session_id: str,
    owner_id: str | None,
    history: list[dict[str, Any]],
    session_state: dict[str, Any] | None,
    dependencies: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
    incremental: bool = True,
    knowledge_filters: Mapping[str, Any] | None = None,
) -> tuple[RunContext, BufferedMemoryStore | LearnedMemoryBuffer | None]:
    wants_memories = component.add_memories_to_context or component.update_memory_on_run
    memories = memories_for_context(user_id=owner_id) if wants_memories else []
    store = (
        BufferedMemoryStore.for_run(user_id=owner_id, agent_id=component.id, memories=memories)
        if component.update_memory_on_run and owner_id
        else None
    )
    if getattr(component, "learning", None) is not None and owner_id:  # learning replaces the legacy pair
        store = LearnedMemoryBuffer.for_run(user_id=owner_id, agent_id=component.id, machine=component.learning)
        memories = store.memories()
    past = StoredPastSessions(user=owner_id, current_session_id=session_id) if component.search_past_sessions and owner_id else None
    ctx = RunContext(
        run_id=run_id,
        session_id=session_id,
        user_id=owner_id,
        history=history,
        memories=memories,
        session_state=session_state,
        session_summary=session.summary if session is not None else None,
        memory_store=store,
        learned_profile=store.profile if isinstance(store, LearnedMemoryBuffer) else None,
        past_sessions=past,
        is_cancelled=cancel_checker(run_id, owner_id),
        dependencies=dependencies,
        metadata=metadata,
        incremental=incremental,
        knowledge_filters=knowledge_filters,
    )
    return ctx, store


def run_prepare(*, principal: Principal, component_id: str, kind: str, request: RunRequest) -> PreparedRun:
    """Resolve the component (``component_id`` of ``kind``) and the session for ``principal``;
    read history and memories."""
    entry = component_entry_for(principal=principal, component_id=component_id, kind=kind, version=request.version)
    session, session_id, owner_id = session_for_run(principal=principal, session_id=request.session_id, requested_user_id=request.user_id)
    # A new session's quota is checked as run_begin writes it, before anything runs.
    prepared = prepare_for_owner(entry=entry, owner_id=owner_id, session=session, session_id=session_id, request=request)
    prepared.ctx.principal = principal  # its tools act with the caller's rights, never more
    return prepared


# Every run reads its session by id: one statement compiled once, whoever owns the row (the
# caller's scope is checked on the row, so another user's session id is refused, not reused).
_SESSION_BY_ID = Select(lambda session_id: Session.objects.unscoped("session_for_run checks the owner").filter(pk=session_id))


def session_for_run(*, principal: Principal, session_id: str | None, requested_user_id: str | None) -> tuple[Session | None, str, str | None]:
    """(existing session or None, its id, the run's owner). Another user's session is not found."""
    owner_id = principal.owner(requested_user_id)
    session: Session | None = None
    if session_id:
        found = _SESSION_BY_ID.all(session_id)
        if found and not in_scope(principal.read_scope(requested_user_id), found[0].user_id):
            raise SessionNotFound(session_id)  # another user's session id: refused, revealing nothing
        session = found[0] if found else None
    if session is not None:
        # Runs in an existing session belong to its owner (an admin may write into any).
        owner_id = session.user_id
    return session, session_id or new_id(), owner_id


def prepare_for_owner(
    *,
    entry: Entry,
    owner_id: str | None,
    session: Session | None,
    session_id: str,
    request: RunRequest,
    stored: Run | None = None,
    followed: bool | None = None,
) -> PreparedRun:
    """Everything a run needs, read for its owner (access was checked by the caller).

    ``stored``: the run's row, when it was accepted before (a background job's): its history is
    the branch before it. ``followed``: someone may watch the text arrive (default: the run is
    streamed). A non-followed run lets providers answer in one piece.
    """
    session_state = dict(session.session_state or {}) if session is not None else None
    if request.session_state:
        session_state = {**(session_state or {}), **request.session_state}
    component = component_for(entry, owner_id, request, session_id=session_id, session_state=session_state)
    run_id = stored.pk if stored is not None else None
    # The session's run counter tells whether any run but this one (already indexed when
    # stored) was ever started in it: a session's first run has no history to read.
    earlier_runs = session is not None and session.next_run_index > (1 if stored is not None else 0)
    history = (
        run_history(user=owner_scope(owner_id), session_id=session_id, limit=component.num_history_runs, before=stored)
        if earlier_runs and component.add_history_to_context
        else []
    )
    run_id = run_id or new_id()
    ctx, store = context_for_run(
        component=component, run_id=run_id, session=session, session_id=session_id, owner_id=owner_id, history=history,
        session_state=session_state, dependencies=request.dependencies, metadata=request.metadata,
        incremental=request.stream if followed is None else followed, knowledge_filters=request.knowledge_filters,
    )
    return PreparedRun(
        entry=entry, component=component, run_id=run_id, session_id=session_id, owner_id=owner_id,
        new_session=session is None, ctx=ctx, memory_store=store, started_at=timezone.now(), request=request,
        streamed=request.stream, stream_events=request.stream_events,
    )


def owner_scope(owner_id: str | None) -> Any:
    """The scope that reads a run's owner's rows (None: an unowned run's)."""
    return owner_id if owner_id else None

def _component_data(component: Component) -> dict[str, Any]:
    """The session's ``agent_data`` / ``team_data`` / ``workflow_data``."""
    if isinstance(component, Workflow):
        return {"name": component.name, "workflow_id": component.id}
    key = "team_id" if isinstance(component, Team) else "agent_id"
    return {"name": component.name, key: component.id, "model": {"id": component.model.id, "provider": component.model.provider, "name": component.model.name}}


def run_begin(prepared: PreparedRun) -> Run:
    """Commit the run RUNNING, with its input (and its session, if new), before anything runs.

    From here it shows in the admin and in its session's runs, it can be cancelled from any
    process, and if this process dies the reaper fails it, saying so (agents.pipeline.inline). A
    continuation under the run's own id claims it instead (PAUSED or failed -> RUNNING, only if
    it still is): two continues of one paused run cannot both run it (RunNotContinuable).
    """
    source = prepared.continued
    if prepared.continues_in_place:
        assert source is not None
        if not run_transition(run_id=source.pk, expected=source.status, to=RunStatus.RUNNING, started_at=source.started_at or timezone.now()):
            raise RunNotContinuable(f"Run {source.pk} is being continued already, or it changed meanwhile: reload it and try again")
        return source
    if source is not None:
        run_input = fork_input(source, (prepared.branch or {}).get("input"))
    else:
        run_input = prepared.request.stored_input() if prepared.request else {}
    return run_record(prepared.record(status=RunStatus.RUNNING, input=run_input), create_session=prepared.new_session)


def fork_input(source: Run, edited: str | None) -> dict[str, Any]:
    """What a continuation in a new run stores as its input: its source's, with the new message
    when one was asked (an edited or follow-up question)."""
    return {**source.input, "input_content": edited} if edited else dict(source.input)



def run_for_caller(*, principal: Principal, run_id: str, session_id: str | None, requested_user_id: str | None = None, component_id: str | None = None) -> Run:
    """The run, if the caller may see it (and it belongs to ``component_id``); else RunNotFound."""
    runs = scope_queryset(Run.objects, principal.read_scope(requested_user_id)).filter(pk=run_id)
    if session_id is not None:
        runs = runs.filter(session_id=session_id)
    if component_id is not None:
        runs = runs.filter(component_id=component_id)
    run = runs.first()
    if run is None:
        raise RunNotFound()
    return run


def cancel_for_caller(*, principal: Principal, run_id: str, session_id: str | None) -> None:
    """Ask a run to stop, wherever it executes; RunNotFound for an isolated caller's own run
    named with another of their sessions.

    An isolated caller names the session (AgentOS's rule). The run may not be recorded yet (a
    request that names a run id it has not yet started), so an unknown id is accepted and the
    intent kept by run id, bound to the caller: it can only ever stop the caller's own run. A
    session or run of another user answers exactly as an unknown id does, so a cancel tells
    nobody whether it exists (a "not found" for it while an unknown id is accepted would), and
    nothing is recorded for it. Agents, teams and workflows all cancel through here.
    """
    if principal.isolated:
        if not session_id:
            raise ValueError("session_id is required for this action")
        if Session.objects.unscoped("another user's session must look like an unknown one").filter(pk=session_id).exclude(user_id=principal.user_id).exists():
            return
        elsewhere = (
            Run.objects.unscoped("a run id in another session must not be cancellable, nor its owner told")
            .filter(pk=run_id).exclude(session_id=session_id).values_list("user_id", flat=True)
        )
        for owner in elsewhere:
            if owner == principal.user_id:
                raise RunNotFound()  # the caller's own run, in another of their sessions
            return
    cancel_request(run_id=run_id, user_id=principal.user_id if principal.isolated else None)
    job_cancel(job_id=run_id, owner=principal.user_id if principal.isolated else None)  # a queued or paused background run ends now
    # A background workflow run's parallel branches: its own checks stop it, and its branches
    # see its intent, but the queued ones end now rather than start only to stop.
    from .workflow_branches import branch_jobs_stop

    branch_jobs_stop(parent_job_id=run_id, reason="the workflow run was cancelled", owner=principal.user_id if principal.isolated else None)


__all__ = [
    "ComponentNotFound",
    "Component",
    "Continuation",
    "DECISIONS_WITH_BRANCH",
    "Entry",
    "InvalidContinuation",
    "PreparedRun",
    "RunForbidden",
    "RunNotContinuable",
    "RunNotFound",
    "RunRequest",
    "cancel_for_caller",
    "component_entry",
    "component_entry_for",
    "component_entry_pinned",
    "component_for",
    "context_for_run",
    "fork_input",
    "member_records",
    "owner_scope",
    "prepare_for_owner",
    "resumed",
    "run_begin",
    "run_for_caller",
    "run_prepare",
    "session_for_run",
]
