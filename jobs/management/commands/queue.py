"""Show the background job queue: counts by status, the oldest waiting job, what is running."""
from __future__ import annotations

from django.core.management.base import BaseCommand
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.selectors import queue_stats


class Command(BaseCommand):
    help = "Show the background job queue (counts, oldest queued, running jobs and their leases)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--limit", type=int, default=20, help="how many queued and running jobs to list")

    def handle(self, *args, limit: int, **options) -> None:
        stats = queue_stats()
        counts = ", ".join(f"{status} {stats['counts'].get(status, 0)}" for status in JobStatus.values)
        self.stdout.write(f"jobs: {counts}")
        age = stats["oldest_queued_age_seconds"]
        self.stdout.write(f"oldest queued: {'-' if age is None else f'{age}s'}")
        now = timezone.now()
        jobs = Job.objects.unscoped("operator view of the queue").filter(status__in=(JobStatus.RUNNING, JobStatus.QUEUED)).order_by("status", "created_at")[:limit]
        for job in jobs:
            lease = f"lease {int((job.lease_expires_at - now).total_seconds())}s" if job.lease_expires_at else ""
            self.stdout.write(f"  {job.status:9} {job.id} {job.component_id} user={job.user_id or '-'} session={job.session_id} attempt {job.attempt}/{job.max_attempts} {job.locked_by} {lease}".rstrip())
