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

from celery import shared_task

from .models import Job, JobStatus
from .services.background import job_execute
from .services.jobs import job_claim, job_reap

logger = logging.getLogger("agno_site.jobs")


def _worker_id() -> str:
    """Who holds a job: the process, and the thread when the worker runs a threads pool."""
    worker = f"celery-{socket.gethostname()}-{os.getpid()}"
    if threading.current_thread() is not threading.main_thread():
        worker += f"/{threading.get_native_id()}"
    return worker


@shared_task(name="agno_site.drain_queue", acks_late=True, ignore_result=True)
def drain_queue() -> int:
    worker = _worker_id()
    done = 0
    while True:
        job = job_claim(worker=worker, probe=done == 0)
        if job is None:
            return done
        job_execute(job, worker)
        done += 1


@shared_task(name="agno_site.reap_jobs", ignore_result=True)
def reap_jobs() -> None:
    job_reap()
    # Safety net: a job accepted while the broker was down was never announced.
    if Job.objects.unscoped("queue health check").filter(status=JobStatus.QUEUED).exists():
        drain_queue.delay()
