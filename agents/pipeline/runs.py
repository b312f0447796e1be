"""Running an agent or a team for a user: the one entry point every transport goes through.

Teams and workflows are more component kinds on the same path: ``PreparedRun.component`` is the
runtime component (an ``Agent``, a ``Team`` or a ``Workflow``, which share the run protocol),
looked up by kind (``component_entry``); a team run's member runs and a workflow run's agent and
team steps are written as its child rows.

``run_prepare`` does the reads (agent, session ownership, history, memories) and builds the
runtime context; ``run_execute`` commits the run RUNNING with its input (``run_begin``), drives
the runtime in the calling thread while its events are written in batches (agents.services.
inline), and records the end in one transaction (run row, session, last events, memories). A
provider failure or a bug in a tool ends the run as ERROR with its reason, never a lost run.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from core.auth import Principal, principal_from_grant, principal_grant
from core.db import release_connections
from core.errors import DomainError
from core.statements import Select
from core.tenancy import in_scope, scope_queryset
from sessions.models import Run, RunEvent, RunOrigin, RunStatus, Session
from sessions.selectors import run_history
from sessions.services.runs import RunRecord, SessionNotFound, new_id, run_finish, run_record, run_transition

from ..registry import AgentEntry, TeamEntry, WorkflowEntry
from engine import Agent, InvalidContinuation, RunContext, Team, Workflow
from engine.checkpoints import boundary
from engine.factory import FactoryContext
from engine.structured import OutputSchema
from .authority import ComponentNotFound, RunForbidden, component_entry, component_entry_pinned, run_authorize
from jobs.services.cancellation import cancel_checker, cancel_request, forget_local
from .context import BufferedMemoryStore, StoredPastSessions, memories_for_context
from learnings.services import LearnedMemoryBuffer
from .eventlog import run_error_event
from jobs.services.executor import in_run_thread
from .hooks import child_hooks_enqueue, hooks_enqueue
from .inline import SERVER_LOST, InlineRecorder, LoopRecorder, watching
from jobs.services.watch import watch
from jobs.services.jobs import job_cancel, job_follow_run, job_submit
from .observers import RunEnd, run_ended

logger = logging.getLogger("agno_site.runs")

EventSink = Callable[[dict[str, Any]], None]
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


def _component_for(
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
    component = _component_for(entry, owner_id, request, session_id=session_id, session_state=session_state)
    run_id = stored.pk if stored is not None else None
    # The session's run counter tells whether any run but this one (already indexed when
    # stored) was ever started in it: a session's first run has no history to read.
    earlier_runs = session is not None and session.next_run_index > (1 if stored is not None else 0)
    history = (
        run_history(user=_owner_scope(owner_id), session_id=session_id, limit=component.num_history_runs, before=stored)
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


def _owner_scope(owner_id: str | None) -> Any:
    return owner_id if owner_id else None


def _drive(prepared: PreparedRun, run_iter: Any, sink: EventSink) -> tuple[dict[str, Any], Any]:
    """Iterate the runtime in this thread, each event to ``sink``; an unexpected exception
    becomes a RunError. Returns the output and the finished run iterator."""
    release_connections()  # the run now waits on its model: it holds no database connection
    try:
        for event in run_iter:
            sink(event)
        return run_iter.output, run_iter
    except Exception as exc:  # a bug in a tool or provider adapter: record it, never lose the run
        output, error_event = _internal_error(prepared, run_iter, exc)
        sink(error_event)
        return output, run_iter


def _internal_error(prepared: PreparedRun, run_iter: Any, exc: Exception) -> tuple[dict[str, Any], dict[str, Any]]:
    """The output and RunError event of a run whose loop raised (a bug, never the model's error)."""
    logger.error("run %s failed unexpectedly", prepared.run_id, exc_info=exc)
    output = dict(getattr(run_iter, "output", None) or {})
    message = f"Internal error while running the agent ({type(exc).__name__})"
    output.update({"run_id": prepared.run_id, "session_id": prepared.session_id, "status": RunStatus.ERROR, "content": message})
    error_event = run_error_event(
        run_id=prepared.run_id, session_id=prepared.session_id, agent_id=prepared.component.id,
        agent_name=prepared.component.name, content=message, error_type="internal_error",
    )
    return output, error_event


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


def replaced_input(finished: Any) -> dict[str, Any]:
    """The input a run's pre-hooks changed (masked), which replaces what the caller sent in the
    stored run; empty when they changed nothing."""
    return dict(getattr(finished, "replaced_input", None) or {})


def run_aftermath(prepared: PreparedRun, status: str, output: dict[str, Any] | None = None, finished: Any = None) -> None:
    """What a run's end changes beyond its own rows, in the end's transaction: the run a completed
    regeneration replaces, the memories it made, the job of its background post-hooks (from the
    ``finished`` run iterator), and what the run-end observers write (agents.pipeline.observers:
    approvals' rows of its paused or decided ``@approval`` tool calls, from ``output``; the
    schedule run of a paused run a schedule fired)."""
    hooks_enqueue(prepared, getattr(finished, "background_hooks", ()))
    child_hooks_enqueue(prepared, getattr(finished, "child_background_hooks", ()))
    if prepared.replaces and status == RunStatus.COMPLETED:
        mark_regenerated(owner_id=prepared.owner_id, run_id=prepared.replaces)
    if prepared.memory_store is not None:
        prepared.memory_store.flush()
    run_ended(RunEnd(
        owner_id=prepared.owner_id, run_id=prepared.run_id, status=status,
        record=prepared.record(status=status, output=output) if output is not None else None, after_pause=prepared.continues_in_place,
    ))


def run_execute(prepared: PreparedRun, *, on_event: EventSink | None = None, run: Run | None = None) -> dict[str, Any]:
    """Run to the end in this thread, through the run loop's sync facade, stored from its first
    moment (``run``: already begun by ``run_begin``; else it is begun here). Returns the RunOutput
    dict. The web server drives runs on its event loop instead (``run_execute_async``)."""
    try:
        run = run or run_begin(prepared)
        recorder = InlineRecorder(run, streamed=prepared.streamed, forward=on_event, first_index=prepared.first_event_index)
        with watching(recorder):
            output, finished = _drive(prepared, prepared.iterate(), recorder)
        return _run_end(prepared, run, recorder, output, finished)
    finally:
        forget_local(prepared.run_id)


def run_watch(prepared: PreparedRun, run: Run) -> LoopRecorder:
    """The event log of a begun run that an event loop will drive, already in the watch's care
    (its batches and heartbeat): made in the thread that began the run, so that driving it costs
    the loop no thread hop before its first event."""
    recorder = LoopRecorder(run, streamed=prepared.streamed, forward=None, first_index=prepared.first_event_index)
    watch.add(run.pk, recorder)
    return recorder


@dataclass(frozen=True)
class Opened:
    """A run started up to its first event (``run_open``): its iterator, for the rest, or what
    its first step raised (a bug, recorded as the run's error when it is driven)."""

    run_iter: Any
    failure: Exception | None = None


def run_open(prepared: PreparedRun, recorder: LoopRecorder, on_event: EventSink | None) -> Opened:
    """Start a run that an event loop drives, now, up to its first event, which goes to
    ``recorder`` (and through it to ``on_event``) at once. A stream's first frame then leaves in
    the loop's step that returns its response, instead of two trips later (the driving task's
    first step, then the stream's wake-up): trips that each wait behind everything the loop has
    ready, which when many runs start together is every other run's work."""
    recorder.forward = on_event
    run_iter = None
    try:
        run_iter = prepared.iterate()
        first = run_iter.opening()
        if first is not None:
            recorder(first)
    except Exception as exc:
        return Opened(run_iter, exc)
    return Opened(run_iter)


async def run_execute_async(
    prepared: PreparedRun, *, run: Run, on_event: EventSink | None = None, recorder: LoopRecorder | None = None,
    opened: Opened | None = None,
) -> dict[str, Any]:
    """Run a begun run to its end on the calling event loop. Waiting on its model (a call, each
    streamed token) or on an I/O tool holds no thread and no database connection: the loop is
    shared by every run of the process. Its event batches and heartbeat are the watch thread's
    (``recorder``: from ``run_watch``; else it is watched here); its end goes to a run thread
    (``RUN_THREADS``) for the moment it takes. ``opened``: started already (``run_open``, with
    ``recorder`` and its ``on_event``)."""
    try:
        if recorder is None:
            recorder = await in_run_thread(run_watch, prepared, run)
        if opened is None:
            recorder.forward = on_event
            opened = Opened(prepared.iterate())
        try:
            output, finished = await _drive_async(prepared, opened.run_iter, recorder, opened.failure)
        except BaseException:
            await in_run_thread(watch.remove, run.pk)
            raise
        return await in_run_thread(_unwatch_and_end, prepared, run, recorder, output, finished)
    finally:
        forget_local(prepared.run_id)


def _unwatch_and_end(prepared: PreparedRun, run: Run, recorder: InlineRecorder, output: dict[str, Any], finished: Any) -> dict[str, Any]:
    watch.remove(run.pk)
    return _run_end(prepared, run, recorder, output, finished)


async def _drive_async(prepared: PreparedRun, run_iter: Any, sink: EventSink, failure: Exception | None = None) -> tuple[dict[str, Any], Any]:
    """``_drive`` on the event loop: the same events, and the same RunError for a bug (``failure``:
    one its opening raised)."""
    try:
        if failure is not None:
            raise failure
        async for event in run_iter:
            sink(event)
        return run_iter.output, run_iter
    except Exception as exc:
        output, error_event = _internal_error(prepared, run_iter, exc)
        sink(error_event)
        return output, run_iter


def _run_end(prepared: PreparedRun, run: Run, recorder: InlineRecorder, output: dict[str, Any], finished: Any) -> dict[str, Any]:
    """Write an inline run's end: its row, its session, its last events and memories, in one
    transaction (and the run it regenerates, or the paused job it continues)."""
    if recorder.given_up:
        logger.warning("run %s was failed by the reaper while it ran here; its result is discarded", run.pk)
        return {**output, "status": RunStatus.ERROR, "content": SERVER_LOST}
    events, first_index = recorder.take_remaining()
    status = str(output.get("status") or RunStatus.ERROR)
    with transaction.atomic():
        run_finish(run, prepared.record(
            status=status, output=output, events=events, first_event_index=first_index, input=replaced_input(finished),
            session_state=output.get("session_state"), summary=getattr(finished, "session_summary", None),
        ))
        if prepared.continues_in_place:
            job_follow_run(run_id=run.pk, run_status=status)  # a paused background run, continued here
        run_aftermath(prepared, status, output, finished)
    return output


# ---- continuing a paused run ----------------------------------------------------------------


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


def continue_prepare(
    *,
    principal: Principal,
    component_id: str,
    kind: str,
    run_id: str,
    session_id: str,
    requested_user_id: str | None,
    tools: list[dict[str, Any]] | None,
    stream: bool = True,
    stream_events: bool = True,
    continuation: Continuation | None = None,
    checks_only: bool = False,
) -> PreparedRun:
    """A continuation of the caller's run, ready to execute; ``checks_only``: checked as fully,
    for a background job that its worker prepares again (no history or memories read here)."""
    run_authorize(principal, kind, component_id)
    run = run_for_caller(principal=principal, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id, component_id=component_id)
    if run.parent_run_id:
        # A team member's or a workflow step's run goes on only with the run it is part of: on its
        # own it would run past its parent (which stays paused, or has moved on), and nothing the
        # parent decides (its approvals, its scope) would hold for it.
        raise RunNotContinuable(f"Run {run.pk} is part of run {run.parent_run_id}: continue that run")
    session = scope_queryset(Session.objects, _owner_scope(run.user_id)).get(pk=run.session_id)
    continuation = continuation or Continuation()
    if tools and run.status != RunStatus.PAUSED:
        # Decisions sent again (a client retrying its confirmation) must not start another run.
        if run.run_type == "workflow":
            raise RunNotContinuable(_WORKFLOW_NOT_PAUSED.get(run.status, f"run is not paused (status={run.status})"))
        raise RunNotContinuable(f"Run {run.pk} is {run.status}, not PAUSED: there is nothing to continue")
    if not (continuation.plain and run.status == RunStatus.PAUSED):
        if tools:
            raise InvalidContinuation(DECISIONS_WITH_BRANCH)
        if run.run_type == "workflow":
            raise RunNotContinuable(f"Cannot continue a run that is not paused. Current status: {run.status}")
        prepared = _branch_prepare(run=run, session=session, continuation=continuation, stream_events=stream_events, checks_only=checks_only)
        prepared.streamed = stream
        prepared.ctx.principal = principal
        return prepared
    prepared = continue_prepare_for_owner(run=run, session=session, tools=tools, stream_events=stream_events, factory_input=continuation.factory_input)
    prepared.streamed = stream
    prepared.ctx.principal = principal
    # Validate the decisions now, so a bad request is a 400 before anything runs.
    resumed(prepared.component, run.run_data, prepared.decisions, prepared.ctx, stream_events)
    return prepared


# AgentOS's 409 details for a workflow run continued when it is not paused (a client that
# sends its step_requirements again reads these).
_WORKFLOW_NOT_PAUSED = {
    RunStatus.PENDING: "run is already pending",
    RunStatus.RUNNING: "run is already running",
    RunStatus.COMPLETED: "run is already completed",
    RunStatus.ERROR: "run has errored",
    RunStatus.CANCELLED: "run is already cancelled",
}


def continue_prepare_for_owner(
    *, run: Run, session: Session, tools: list[dict[str, Any]] | None, require_paused: bool = True, stream_events: bool = True,
    factory_input: Mapping[str, Any] | None = None,
) -> PreparedRun:
    if require_paused and run.status != RunStatus.PAUSED:
        raise RunNotContinuable(f"Run {run.pk} is {run.status}, not PAUSED: there is nothing to continue")
    entry, component, ctx, store = _continuing(run, session, run_id=run.pk, before=run, factory_input=factory_input)
    return PreparedRun(
        entry=entry, component=component, run_id=run.pk, session_id=run.session_id, owner_id=run.user_id, new_session=False,
        ctx=ctx, memory_store=store, started_at=timezone.now(), continued=run, decisions=list(tools or []),
        first_event_index=next_event_index(run), stream_events=stream_events,
    )


def _continuing(
    run: Run, session: Session, *, run_id: str, before: Run, factory_input: Mapping[str, Any] | None = None,
) -> tuple[Entry, Component, RunContext, BufferedMemoryStore | None]:
    """What continuing ``run`` needs: its agent, and a context for its owner under ``run_id``
    with the history of the branch before ``before`` (the run itself, or the run an edit or a
    regeneration takes the place of: its transcript is the run's own, and later turns and other
    versions are not part of it)."""
    entry = continued_entry(run)
    component = _component_for(entry, run.user_id, None, session_id=run.session_id, session_state=session.session_state, factory_input=factory_input)
    history = run_history(user=_owner_scope(run.user_id), session_id=run.session_id, limit=component.num_history_runs, before=before) if component.add_history_to_context else []
    ctx, store = context_for_run(
        component=component, run_id=run_id, session=session, session_id=run.session_id, owner_id=run.user_id, history=history,
        session_state=dict(session.session_state or {}), dependencies=None, metadata=None,
    )
    return entry, component, ctx, store


def continued_entry(run: Run) -> Entry:
    """The component ``run`` goes on with: a database workflow's run at the version it paused
    in (the server recorded it, in ``workflow_version``), whatever was published since; any other
    run at its live version."""
    version = (run.run_data or {}).get("workflow_version") if run.run_type == "workflow" else None
    if isinstance(version, int):
        return component_entry_pinned(run.component_id, kind="workflow", version=version)
    return component_entry(run.component_id, kind=run.run_type)


def next_event_index(run: Run) -> int:
    """The ``event_index`` the run's next stored event takes (0 for a run with none)."""
    top = scope_queryset(RunEvent.objects, _owner_scope(run.user_id)).filter(run_id=run.pk).aggregate(top=Max("event_index"))["top"]
    return 0 if top is None else top + 1


def _branch_prepare(
    *, run: Run, session: Session, continuation: Continuation, stream_events: bool, run_id: str | None = None, checks_only: bool = False,
) -> PreparedRun:
    """A continuation that runs the loop again from a message boundary (see Continuation).

    ``run_id``: the new run's id when it is already known (a background job's). ``checks_only``:
    the agent and the boundary are checked, but the context is the bare one the checks need.
    """
    if run.status == RunStatus.CANCELLED:
        raise RunNotContinuable(f"Cannot continue run {run.pk}: run is cancelled")
    if run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        raise RunNotContinuable(f"Run {run.pk} is {run.status}: continue it once it has ended")
    keep = boundary(run.run_data.get("messages") or [], continuation.continue_from, regenerate=continuation.regenerate)
    # Continuing a finished run never reuses its id: one run is one model loop.
    fork = continuation.fork or continuation.regenerate or run.status in (RunStatus.COMPLETED, RunStatus.REGENERATED)
    run_id = (run_id or new_id()) if fork else run.pk
    if checks_only:
        entry = component_entry(run.component_id, kind=run.run_type)
        component = _component_for(
            entry, run.user_id, None, session_id=run.session_id, session_state=session.session_state, factory_input=continuation.factory_input,
        )
        store = None
        ctx = RunContext(run_id=run_id, session_id=run.session_id, user_id=run.user_id, session_state=dict(session.session_state or {}))
    else:
        entry, component, ctx, store = _continuing(run, session, run_id=run_id, before=run, factory_input=continuation.factory_input)
    branch = {
        "keep": keep, "fork": fork, "input": continuation.input,
        "regenerated_from": run.pk if continuation.regenerate else None, "stream_events": stream_events,
    }
    component.branch_run(run.run_data, ctx, **branch)  # a bad request is a 400 now, before anything runs
    return PreparedRun(
        entry=entry, component=component, run_id=run_id, session_id=run.session_id, owner_id=run.user_id, new_session=False,
        ctx=ctx, memory_store=store, started_at=timezone.now(), continued=run, branch=branch,
        first_event_index=0 if fork else next_event_index(run),
        replaces=run.pk if continuation.regenerate and continuation.replace_original is not False else None,
        stream_events=stream_events,
    )


def mark_regenerated(*, owner_id: str | None, run_id: str) -> None:
    """The run a completed regeneration replaces: kept, but no longer part of the history."""
    replaced = scope_queryset(Run.objects, _owner_scope(owner_id)).filter(pk=run_id).first()
    if replaced is not None:
        replaced.status = RunStatus.REGENERATED
        replaced.run_data = {**replaced.run_data, "status": RunStatus.REGENERATED}
        replaced.updated_at = timezone.now()
        replaced.save(update_fields=["status", "run_data", "updated_at"])


def branch_submit(
    *,
    principal: Principal,
    component_id: str,
    kind: str,
    run_id: str,
    session_id: str,
    requested_user_id: str | None,
    continuation: Continuation,
    stream: bool,
    stream_events: bool = True,
) -> Any:
    """A continuation in a new run, as a durable background job (``background=true``).

    Checked as an inline one would be, so a bad request is a 4xx before anything is queued;
    the new run is PENDING from the moment of the 202. Returns the job.
    """
    prepared = continue_prepare(
        principal=principal, component_id=component_id, run_id=run_id, session_id=session_id, requested_user_id=requested_user_id,
        tools=None, stream_events=stream_events, continuation=continuation, checks_only=True, kind=kind,
    )
    if prepared.branch is None or not prepared.branch["fork"]:
        raise InvalidContinuation("background=true continues in a new run: pass fork=true to retry a failed run in the background")
    source = prepared.continued
    assert source is not None
    payload = {
        "source_run_id": source.pk, "continue_from": continuation.continue_from, "fork": True,
        "regenerate": continuation.regenerate, "replace_original": continuation.replace_original,
        "input": continuation.input, "stream_events": stream_events, "principal": principal_grant(principal),
        "factory_input": continuation.factory_input,
    }
    accepted = job_submit(
        owner_id=prepared.owner_id, session=None, session_id=prepared.session_id, component_id=component_id, component_type=kind,
        payload=payload, input=fork_input(source, continuation.input), stream=stream, run_id=prepared.run_id, job_type="branch",
        origin=source.origin, redoes=prepared.redoes,
    )
    return accepted.job


def branch_prepare_for_job(*, job: Any, session: Session) -> PreparedRun:
    """A branch job's run, prepared in the worker from the run it continues."""
    payload = job.payload
    source = scope_queryset(Run.objects, _owner_scope(job.user_id)).filter(pk=payload["source_run_id"]).first()
    if source is None:  # deleted after the job was accepted: nothing left to continue
        raise RunNotContinuable(f"Run {payload['source_run_id']} was deleted before this continuation could run")
    continuation = Continuation(
        continue_from=payload.get("continue_from", "end"), fork=True, regenerate=bool(payload.get("regenerate")),
        replace_original=payload.get("replace_original"), input=payload.get("input"), factory_input=payload.get("factory_input"),
    )
    prepared = _branch_prepare(run=source, session=session, continuation=continuation, stream_events=payload.get("stream_events", True), run_id=job.pk)
    prepared.ctx.principal = principal_from_grant(payload.get("principal"))
    return prepared


__all__ = [
    "ComponentNotFound",
    "Continuation",
    "RunForbidden",
    "component_entry",
    "component_entry_for",
    "component_entry_pinned",
    "DECISIONS_WITH_BRANCH",
    "InvalidContinuation",
    "PreparedRun",
    "RunNotContinuable",
    "RunNotFound",
    "RunRequest",
    "branch_prepare_for_job",
    "branch_submit",
    "continue_prepare",
    "mark_regenerated",
    "next_event_index",
    "run_begin",
    "run_execute",
    "run_execute_async",
    "run_open",
    "run_for_caller",
    "run_prepare",
]
