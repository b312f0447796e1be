"""A background workflow run's ``Parallel`` branches as jobs of one group.

On the background path a ``Parallel`` submits one "workflow-branch" job per branch, all of the
workflow run's group (``group_id`` and ``parent_job_id`` = the workflow run's job, with their
``branch_index``). Any worker process claims them, so branches spread over Celery workers; the
claim exempts them from the one-running-job-per-session rule (their parent holds the session's
turn) and lets them take their waiting parent's place under the caps (jobs.services.claims).

A branch job rebuilds its branch from the workflow's id, version and the ``Parallel``'s path in
the graph, runs it under the workflow run's id (its executor runs are children of the workflow
run, its cancellation is the workflow run's), and writes what it made into ``Job.result`` with
its end, fenced. The parent waits holding no thread and no connection: it polls the group's rows
with back-off from its event loop, and gives its worker's slot back meanwhile (``parked``).

Branch job ids are derived from the parent's id, the run segment (a continuation is a new one),
the ``Parallel``'s path, its occurrence in the run (a Loop runs it again) and the branch: the
parent re-run by the reaper after its worker died submits the same ids, finds the finished
branches and reuses their stored results, and waits for those still going.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from core.auth import principal_from_grant
from core.tenancy import scope_queryset
from sessions.models import Run, RunStatus
from sessions.selectors import run_history

from jobs.models import Job, JobStatus
from engine import RunContext, Workflow
from engine.aio import maybe_await
from engine.factory import FactoryContext
from engine.workflow import WorkflowRun
from engine.workflow_branches import BranchResult, run_branch, step_input_from_dict, step_input_to_dict
from engine.workflow_types import StepInput
from jobs.services.cancellation import CancelChecker, cancel_checker, cancel_clear, cancel_request, forget_local
from jobs.services.executor import in_run_thread, parked
from jobs.services.execution import Lease
from jobs.services.jobs import dispatch, job_cancel, job_ended, job_settle_fenced
from .runs import ComponentNotFound, component_entry, component_entry_pinned, context_for_run
from .eventlog import FLUSH_SECONDS
from jobs.services.watch import watch

logger = logging.getLogger("agno_site.jobs")

BRANCH_JOB_TYPE = "workflow-branch"
# How seldom a waiting parent reads its group at most: from 50 ms doubling to this (a branch in
# this process wakes it at once).
MAX_POLL_SECONDS = 0.5
ENDED = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)


def _jobs():
    return Job.objects.unscoped("a workflow run's branch jobs, read and written by its own worker")


def branch_job_id(parent_id: str, segment: str, path: str, occurrence: int, branch: int) -> str:
    """The same id for the same branch of the same execution of a Parallel in a run, in every
    attempt of the parent (so a re-run finds what the lost attempt's branches did)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agno-branch:{parent_id}:{segment}:{path}:{occurrence}:{branch}"))


class JobBranches:
    """``ParallelBranches`` for a workflow run executing as the job ``job``."""

    def __init__(self, job: Job, lease: Lease, *, version: int | None = None) -> None:
        self.job, self.lease = job, lease
        # The version the run executes, so that every branch is of the same definition.
        self.version = version if version is not None else job.payload.get("version")
        # A continuation starts a new segment: its Parallels are new executions, not the paused
        # run's (whose branches ended long ago) even where the path and occurrence repeat.
        self.segment = str(job.payload.get("continued_at_attempt") or 0) if job.job_type == "continue" else "0"
        self._occurrences: dict[str, int] = {}

    async def run_branches(
        self, *, scope: WorkflowRun, path: str, count: int, step_input: StepInput, index: int | list[int],
    ) -> AsyncIterator[dict[str, Any] | list[BranchResult]]:
        occurrence = self._occurrences.get(path, 0)
        self._occurrences[path] = occurrence + 1
        ids = [branch_job_id(self.job.pk, self.segment, path, occurrence, branch) for branch in range(count)]
        payload = {
            "run_id": self.job.pk, "path": path, "index": index, "step_input": step_input_to_dict(step_input),
            "keep_deltas": bool(self.job.stream), "version": self.version,
            "draft_allowed": bool(self.job.payload.get("draft_allowed")),
            "principal": self.job.payload.get("principal"),
            # A factory-built workflow is built again for each branch, from what its run was.
            "factory_input": self.job.payload.get("factory_input"), "dependencies": self.job.payload.get("dependencies"),
            "session_state": self.job.payload.get("session_state"),
        }
        await in_run_thread(branch_jobs_submit, parent=self.job, ids=ids, payload=payload)
        try:
            with parked():
                async with aclosing(self._wait(scope, ids)) as items:
                    async for item in items:
                        yield item
        except BaseException:
            # The workflow run was cancelled or stopped: its branches stop too. Not when this
            # attempt lost its lease: the attempt that took the run over waits for them.
            if not self.lease.lost:
                await asyncio.shield(in_run_thread(branch_jobs_stop, ids=ids, reason="the workflow run was cancelled"))
            raise

    async def _wait(self, scope: WorkflowRun, ids: list[str]) -> AsyncIterator[dict[str, Any] | list[BranchResult]]:
        """Until every branch has ended: the group's rows read with back-off (a branch in another
        process), and at once when a branch of this process writes (``_wake``); each branch's
        new events passed on as they arrive, in its order, then the results."""
        delay = 0.05
        relayed = [_Relayed() for _ in ids]
        woken = asyncio.Event()
        waiter = (asyncio.get_running_loop(), woken)
        with _lock:
            _waiting.setdefault(self.job.pk, []).append(waiter)
        try:
            while True:
                woken.clear()
                rows = await in_run_thread(branch_jobs_read, ids=ids)
                finished = all(row["status"] in ENDED for row in rows)
                fresh = False
                for row, seen in zip(rows, relayed):
                    done = row["status"] == JobStatus.COMPLETED
                    source = row["result"] if done else row["progress"]
                    for event in seen.new(source or {}):
                        fresh = True
                        yield event
                if finished:
                    yield [_result_of(row) for row in rows]
                    return
                await scope.check_cancelled()
                if fresh:
                    delay = 0.05  # it is talking: look again soon
                try:
                    await asyncio.wait_for(woken.wait(), delay)
                except asyncio.TimeoutError:
                    delay = min(delay * 2, MAX_POLL_SECONDS)
        finally:
            with _lock:
                waiters = _waiting.get(self.job.pk, [])
                if waiter in waiters:
                    waiters.remove(waiter)
                if not waiters:
                    _waiting.pop(self.job.pk, None)


class _Relayed:
    """How many of a branch's events (of which attempt) its parent has passed on."""

    def __init__(self) -> None:
        self.attempt, self.count = 0, 0

    def new(self, written: dict[str, Any]) -> list[dict[str, Any]]:
        events = written.get("events") or []
        attempt = int(written.get("attempt") or 0)
        if attempt != self.attempt:
            # A retried branch starts again: its new attempt's events are all new.
            self.attempt, self.count = attempt, 0
        fresh = events[self.count:]
        self.count = max(self.count, len(events))
        return fresh


# The workflow runs of this process waiting for their groups: parent job id -> (loop, event).
_waiting: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
_lock = threading.Lock()


def _wake(parent_job_id: str) -> None:
    """A branch of this process wrote (its events, its end): its parent, if it waits here, reads its group now."""
    with _lock:
        waiters = list(_waiting.get(parent_job_id, []))
    for loop, event in waiters:
        try:
            loop.call_soon_threadsafe(event.set)
        except RuntimeError:  # its loop has closed
            pass


def _result_of(row: dict[str, Any]) -> BranchResult:
    if row["status"] == JobStatus.COMPLETED:
        return BranchResult.from_dict(row["result"] or {})
    if row["status"] == JobStatus.CANCELLED:
        return BranchResult(cancelled=True)
    return BranchResult(error=row["error"] or "the branch's job failed", error_type="branch_job_failed")


def branch_jobs_submit(*, parent: Job, ids: list[str], payload: dict[str, Any]) -> None:
    """The group's jobs, queued in one transaction: new ones created, finished ones left as they
    are (their results are reused), failed or cancelled ones of a lost attempt queued again."""
    now = timezone.now()
    # The run's own attempt budget, as its web tier admitted it (what its attempt has left).
    attempts = max(1, parent.max_attempts - parent.attempt + 1)
    with transaction.atomic():
        existing = {job.pk: job for job in _jobs().select_for_update().filter(pk__in=ids, parent_job_id=parent.pk)}
        fresh, again = [], []
        for branch, job_id in enumerate(ids):
            job = existing.get(job_id)
            if job is None:
                fresh.append(Job(
                    id=job_id, job_type=BRANCH_JOB_TYPE, user_id=parent.user_id, component_id=parent.component_id, component_type="workflow",
                    session_id=parent.session_id, group_id=parent.pk, parent_job_id=parent.pk, branch_index=branch,
                    payload={**payload, "branch_index": branch}, stream=parent.stream, max_attempts=attempts,
                    idempotency_scope=parent.user_id or "", created_at=now, updated_at=now, available_at=now,
                ))
            elif job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
                again.append(job.pk)
        if fresh:
            Job.objects.bulk_create(fresh)
        for job_id in again:
            cancel_clear(run_id=job_id)
            attempt = _jobs().filter(pk=job_id).values_list("attempt", flat=True).first() or 0
            _jobs().filter(pk=job_id, status__in=(JobStatus.FAILED, JobStatus.CANCELLED)).update(
                status=JobStatus.QUEUED, max_attempts=attempt + attempts, available_at=now, locked_by="",
                lease_expires_at=None, error="", result={}, completed_at=None, updated_at=now,
            )
        if fresh or again:
            transaction.on_commit(lambda: dispatch(len(fresh) + len(again)))


def branch_jobs_read(*, ids: list[str]) -> list[dict[str, Any]]:
    """The group's rows in branch order (one query)."""
    rows = {row["id"]: row for row in _jobs().filter(pk__in=ids).values("id", "status", "result", "progress", "error")}
    gone = {"status": JobStatus.FAILED, "result": {}, "progress": {}, "error": "the branch's job is gone"}
    return [rows.get(job_id) or {"id": job_id, **gone} for job_id in ids]


def branch_jobs_stop(*, ids: list[str] | None = None, parent_job_id: str | None = None, reason: str, owner: str | None = None) -> int:
    """Stop a group's branches: queued ones end CANCELLED now, running ones at their next check
    (an intent on the branch job's id). ``ids`` or every branch of ``parent_job_id``; ``owner``:
    only that user's (an isolated caller's cancel)."""
    jobs = _jobs().filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING), job_type=BRANCH_JOB_TYPE)
    jobs = jobs.filter(pk__in=ids) if ids is not None else jobs.filter(parent_job_id=parent_job_id)
    if owner is not None:
        jobs = jobs.filter(user_id=owner)
    stopped = 0
    for job_id, status in list(jobs.values_list("id", "status")):
        if status == JobStatus.QUEUED and job_cancel(job_id=job_id, reason=reason):
            stopped += 1
        else:
            cancel_request(run_id=job_id, user_id=None)
            stopped += 1
    return stopped


# ---- executing a branch job ---------------------------------------------------------------------


class _BranchEvents:
    """A running branch's events so far, written into its job's ``progress`` by the watch thread
    every ``FLUSH_SECONDS`` while there are new ones (fenced), for its parent to pass on live."""

    def __init__(self, job: Job, worker: str) -> None:
        self.job, self.worker = job, worker
        self.events: list[dict[str, Any]] = []
        self.written = 0
        self.lock = threading.Lock()
        self.last = time.monotonic()

    def __call__(self, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(event)

    def tick(self, now: float) -> None:
        if now - self.last < FLUSH_SECONDS:
            return
        self.last = now
        with self.lock:
            if len(self.events) == self.written:
                return
            events = list(self.events)
        job = self.job
        held = _jobs().filter(pk=job.pk, status=JobStatus.RUNNING, locked_by=self.worker, attempt=job.attempt)
        if held.update(progress={"attempt": job.attempt, "events": events}, updated_at=timezone.now()):
            self.written = len(events)
            _wake(job.parent_job_id)


@dataclass
class _Branch:
    job: Job
    worker: str
    lease: Lease
    events: _BranchEvents
    workflow: Workflow | None = None
    ctx: RunContext | None = None
    failed: BranchResult | None = None  # set when it cannot run at all
    # The parent workflow run's checker: its run goes on elsewhere, so it is released at the end.
    parent_check: CancelChecker | None = None


def _either(first: Callable[[], Any], second: Callable[[], Any]) -> Callable[[], bool | Awaitable[bool]]:
    """Cancelled when the workflow run is, or this branch job is (its lease lost, its group stopped)."""

    def is_cancelled() -> bool | Awaitable[bool]:
        a, b = first(), second()
        if not inspect.isawaitable(a) and not inspect.isawaitable(b):
            return bool(a or b)

        async def later() -> bool:
            return bool(await maybe_await(a)) or bool(await maybe_await(b))

        return later()

    return is_cancelled


def _branch_begin(job: Job, worker: str) -> _Branch:
    branch = _Branch(job=job, worker=worker, lease=Lease(job, worker), events=_BranchEvents(job, worker))
    # Renewed at the watch's first tick: a branch claimed while its process was still warming up
    # (its first import of a provider's SDK, say) may have begun late in its first lease.
    branch.lease.renew_at = time.monotonic()
    watch.add(job.pk, branch.lease, branch.events)
    payload = job.payload
    try:
        run = scope_queryset(Run.objects, job.user_id).select_related("session").filter(pk=payload["run_id"]).first()
        if run is None:
            raise LookupError(f"workflow run {payload['run_id']} is gone")
        version = payload.get("version")
        if payload.get("draft_allowed") and version is not None:
            entry = component_entry_pinned(job.component_id, kind="workflow", version=version)
        else:
            entry = component_entry(job.component_id, kind="workflow", version=version)
        session = run.session
        workflow = entry.build_for(FactoryContext(
            user_id=job.user_id, session_id=session.pk, session_state={**(session.session_state or {}), **(payload.get("session_state") or {})},
            dependencies=payload.get("dependencies"), input=payload.get("factory_input"),
        ))
        history = (
            run_history(user=job.user_id or None, session_id=session.pk, limit=workflow.num_history_runs, before=run)
            if session.next_run_index > 1 else []
        )
        ctx, _store = context_for_run(
            component=workflow, run_id=run.pk, session=session, session_id=session.pk, owner_id=job.user_id, history=history,
            session_state=None, dependencies=None, metadata=None, incremental=bool(payload.get("keep_deltas")),
        )
        ctx.principal = principal_from_grant(payload.get("principal"))  # the workflow run's own rights
        branch.parent_check = ctx.is_cancelled
        ctx.is_cancelled = _either(ctx.is_cancelled, cancel_checker(job.pk, job.user_id))
        branch.workflow, branch.ctx = workflow, ctx
    except DatabaseError:
        _branch_unwatch(branch)
        raise  # the database went away: the reaper retries the job or fails it visibly
    except ComponentNotFound:
        branch.failed = BranchResult(error=f"Workflow {job.component_id} is no longer available", error_type="workflow_not_found")
    except LookupError as exc:
        branch.failed = BranchResult(error=f"The branch cannot run: {exc}", error_type="branch_not_found")
    return branch


def _branch_unwatch(branch: _Branch) -> None:
    watch.remove(branch.job.pk)
    forget_local(branch.job.pk)
    if branch.parent_check is not None:
        branch.parent_check.release()


def _branch_end(branch: _Branch, result: BranchResult) -> str:
    """The branch's result and its job's end, in one fenced transaction."""
    job, worker = branch.job, branch.worker
    status = RunStatus.CANCELLED if result.cancelled else RunStatus.COMPLETED
    with transaction.atomic():
        if branch.lease.lost:
            return "LOST"
        held = _jobs().filter(pk=job.pk, status=JobStatus.RUNNING, locked_by=worker, attempt=job.attempt)
        if not held.update(result={**result.to_dict(), "attempt": job.attempt}) or not job_settle_fenced(job=job, worker=worker, run_status=status):
            transaction.set_rollback(True)
            logger.warning("branch job %s: lost its lease before finishing; its result is discarded", job.pk)
            return "LOST"
        job_ended(job=job, status=status)
    _wake(job.parent_job_id)
    return status


async def branch_job_execute(job: Job, worker: str) -> str:
    """Run a claimed branch job on the worker's event loop (waiting on its models holds no thread)."""
    branch = await in_run_thread(_branch_begin, job, worker)
    try:
        if branch.failed is not None:
            result = branch.failed
        else:
            assert branch.workflow is not None and branch.ctx is not None
            payload = job.payload
            try:
                result = await run_branch(
                    branch.workflow, branch.ctx, run_id=payload["run_id"], path=payload["path"], branch_index=int(payload["branch_index"]),
                    step_input=step_input_from_dict(payload["step_input"]), index=payload["index"], keep_deltas=bool(payload.get("keep_deltas")),
                    on_event=branch.events,
                )
            except DatabaseError:
                raise
            except LookupError as exc:
                result = BranchResult(error=f"The branch cannot run: {exc}", error_type="branch_not_found")
            except Exception as exc:  # a bug in the branch's code: its Parallel fails, saying so
                logger.exception("branch job %s failed unexpectedly", job.pk)
                result = BranchResult(error=f"Internal error while running the branch ({type(exc).__name__})", error_type="internal_error")
    finally:
        await in_run_thread(_branch_unwatch, branch)
    return await in_run_thread(_branch_end, branch, result)
