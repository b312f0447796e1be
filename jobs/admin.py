"""The job queue in the operator console: background jobs with their attempts, lease and worker;
cancel and retry."""
from __future__ import annotations

from django.contrib import admin

from core.admin import OwnedModelAdmin, UserIdFilter

from .models import Job
from .services.cancellation import cancel_request
from .services.jobs import job_cancel, job_requeue


# CancelIntent is not in the console: a row is the API's "cancel this run" note to whichever
# process runs it, written by the cancel service and consumed by the run. Operators cancel with
# the Runs and Jobs pages' *Cancel* action, which writes it; an edited or deleted row would
# un-cancel a run behind the API's back.


@admin.register(Job)
class JobAdmin(OwnedModelAdmin):
    """Background runs: status, attempts, lease and worker; cancel and retry."""

    list_display = ("id", "component_id", "user_id", "session_id", "status", "attempts", "locked_by", "lease_expires_at", "created_at", "started_at", "completed_at")
    list_filter = ("status", UserIdFilter, "component_id", "created_at")
    search_fields = ("id", "session_id", "user_id", "component_id", "idempotency_key", "locked_by")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    readonly_fields = [field.name for field in Job._meta.fields]
    actions = ["cancel_jobs", "retry_jobs"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="attempts")
    def attempts(self, obj: Job) -> str:
        return f"{obj.attempt}/{obj.max_attempts}"

    @admin.action(description="Cancel (queued or paused: now; running: at its next step)")
    def cancel_jobs(self, request, queryset) -> None:
        for job in queryset:
            cancel_request(run_id=job.pk, user_id=job.user_id)
            job_cancel(job_id=job.pk, reason="cancelled by an operator")
        self.message_user(request, f"Cancellation requested for {queryset.count()} job(s).")

    @admin.action(description="Retry failed or cancelled jobs (same run, one more attempt)")
    def retry_jobs(self, request, queryset) -> None:
        retried = [job.pk for job in queryset if job_requeue(job_id=job.pk) is not None]
        skipped = queryset.count() - len(retried)
        self.message_user(request, f"Requeued {len(retried)} job(s)" + (f"; {skipped} were not failed or cancelled." if skipped else "."))
