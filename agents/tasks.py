"""Celery tasks: ``celery -A agno_site worker`` executes background runs, beat runs the reaper.

Tasks carry no run data: the job table is the truth. ``drain_queue`` claims and executes jobs
until none may start; it is sent when a job is accepted and when the reaper requeues one, and is
safe to run twice (a claim is a conditional update).
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time

from celery import shared_task
from django.conf import settings

from .services import background  # noqa: F401  (registers the run jobs' handler)
from .services.inline import inline_runs_reap
from .services.jobs import dispatch, job_claim, job_reap, job_run, startable_count

logger = logging.getLogger("agno_site.jobs")
_clock = time.monotonic


def _worker_id() -> str:
    """Who holds a job: the process, and the thread when the worker runs a threads pool."""
    worker = f"celery-{socket.gethostname()}-{os.getpid()}"
    if threading.current_thread() is not threading.main_thread():
        worker += f"/{threading.get_native_id()}"
    return worker


@shared_task(name="agno_site.drain_queue", acks_late=True, ignore_result=True)
def drain_queue() -> int:
    """Claim and run jobs back to back while the task's time limit still has room for a whole one.

    A job may take up to AGENTOS_BACKGROUND_TIMEOUT_SECONDS; the task's soft limit is that plus a
    margin, so after the margin is spent the task stops claiming and hands the rest of the queue to
    a fresh task, rather than being killed half way through its fourth job.
    """
    worker = _worker_id()
    started = _clock()
    done = 0
    while True:
        job = job_claim(worker=worker, probe=done == 0)
        if job is None:
            return done
        job_run(job, worker)
        done += 1
        if not _room_for_another(_clock() - started):
            dispatch()  # the rest of the backlog, in a task with its whole time limit ahead
            return done


def _room_for_another(elapsed: float) -> bool:
    soft_limit = drain_queue.soft_time_limit or drain_queue.app.conf.task_soft_time_limit
    if not soft_limit:
        return True
    return elapsed + settings.AGENTOS_BACKGROUND_TIMEOUT_SECONDS < soft_limit


@shared_task(name="agno_site.reap_jobs", ignore_result=True)
def reap_jobs() -> None:
    job_reap()
    inline_runs_reap()
    # Every job that could start now gets a drain task of its own, so recovery after a lost
    # worker or a broker outage uses every free worker at once (a job accepted while the broker
    # was down was never announced; a retried one waited out its back-off).
    dispatch(startable_count())
