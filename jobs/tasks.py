"""Celery tasks: ``celery -A agno_site worker`` executes background runs, beat runs the reaper.

Tasks carry no run data: the job table is the truth. ``drain_queue`` wakes the worker process's
job loop (jobs.loop_worker), which claims and executes jobs while it has room; it is sent when
a job is accepted and when the reaper requeues one, and is safe to run any number of times (a
claim is a conditional update).
"""
from __future__ import annotations


from celery import shared_task
from celery.signals import worker_process_shutdown, worker_shutdown
from django.conf import settings

from core.services.readiness import reaper_pass_record

from .loop_worker import process_worker
from .services.jobs import dispatch
from .selectors import startable_count
from .services.reaper import reap



@shared_task(name="agno_site.drain_queue", ignore_result=True)
def drain_queue() -> int:
    """There is work: wake this worker process's job loop, which claims jobs while it has room
    (WORKER_RUNS_PER_PROCESS) and runs them side by side, and return at once. Jobs do not run
    inside the task, so no task time limit applies to them (AGENTOS_BACKGROUND_TIMEOUT_SECONDS
    does, through the lease). Returns the jobs the loop carries now."""
    worker = process_worker()
    worker.wake()
    return worker.in_flight


@shared_task(name="agno_site.reap_jobs", ignore_result=True)
def reap_jobs() -> None:
    reap()
    reaper_pass_record()  # what GET /ready reads
    # Every job that could start now gets a drain task of its own, so recovery after a lost
    # worker or a broker outage uses every free worker at once (a job accepted while the broker
    # was down was never announced; a retried one waited out its back-off).
    dispatch(startable_count())


@worker_process_shutdown.connect
@worker_shutdown.connect
def _finish_jobs_in_flight(**_: object) -> None:
    """A warm shutdown (a deploy) lets the jobs this process carries finish, up to a lease's
    length; what is still running then is left to its lease and the reaper, as after a crash."""
    from .loop_worker import process_worker_stop

    process_worker_stop(timeout=settings.AGENTOS_BACKGROUND_LEASE_SECONDS)
