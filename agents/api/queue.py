"""The /queue family: the durable job queue's jobs, one job, requeue and stats (AgentOS §10.8).

An operator's surface over every user's jobs: only an admin may use it, or the open server, which
has no RBAC (AgentOS lets a deployment without JWT through). Anyone else gets AgentOS's 403
"Job queue operations require an admin scope", whatever the scopes they hold.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import BadRequest, Conflict, Forbidden, NotFound
from core.api.params import boolean, envelope, page, sort_order_param
from core.api.schema import ErrorOut, PaginationInfoOut, ValidationErrorOut, query_param
from core.api.views import AgentOSView
from core.auth import Principal

from jobs.models import Job, JobStatus
from jobs.services import queue as operations
from jobs.selectors import queue_stats

TAGS = ["Queue"]
ADMIN_ONLY = "Job queue operations require an admin scope"
JOB_ID = OpenApiParameter("job_id", OpenApiTypes.STR, OpenApiParameter.PATH)
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut}
REPEATABLE = {"type": "array", "items": {"type": "string"}}


def operates_queue(principal: Principal) -> bool:
    return principal.is_admin or (principal.via == "none" and not principal.guest)


def _epoch(value) -> int | None:
    return int(value.timestamp()) if value is not None else None


def render_job(job: Job) -> dict[str, Any]:
    """AgentOS's ``QueueJobSchema``. ``locked_at`` is when the holding attempt started."""
    return {
        "id": job.pk, "component_type": job.component_type, "component_id": job.component_id, "session_id": job.session_id,
        "job_type": job.job_type, "user_id": job.user_id, "payload": job.payload, "status": job.status,
        "attempt": job.attempt, "max_attempts": job.max_attempts, "idempotency_key": job.idempotency_key,
        "available_at": _epoch(job.available_at), "locked_by": job.locked_by or None,
        "locked_at": _epoch(job.started_at) if job.locked_by else None, "error": job.error or None,
        "created_at": _epoch(job.created_at), "updated_at": _epoch(job.updated_at), "completed_at": _epoch(job.completed_at),
    }


class QueueJobOut(serializers.Serializer):
    id = serializers.CharField(help_text="The job's id: its run's run_id")
    component_type = serializers.CharField()
    component_id = serializers.CharField()
    session_id = serializers.CharField()
    job_type = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    payload = serializers.DictField()
    status = serializers.ChoiceField(choices=JobStatus.values)
    attempt = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    idempotency_key = serializers.CharField(allow_null=True)
    available_at = serializers.IntegerField(allow_null=True)
    locked_by = serializers.CharField(allow_null=True)
    locked_at = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    created_at = serializers.IntegerField(allow_null=True)
    updated_at = serializers.IntegerField(allow_null=True)
    completed_at = serializers.IntegerField(allow_null=True)


class PaginatedQueueJobsOut(serializers.Serializer):
    data = QueueJobOut(many=True)
    meta = PaginationInfoOut()


class QueueStatsOut(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Jobs by status")
    oldest_queued_age_seconds = serializers.IntegerField(allow_null=True)


class QueueAPIView(AgentOSView):
    authenticated_only = True  # no scope of its own at the route gate (AgentOS): the admin check below

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not operates_queue(self.principal):
            raise Forbidden(ADMIN_ONLY)

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, operations.JobMissing):
            exc = NotFound(str(exc))
        elif isinstance(exc, operations.NotRequeueable):
            exc = BadRequest(str(exc))
        elif isinstance(exc, operations.RequeueRefused):
            exc = Conflict(str(exc))
        return super().handle_exception(exc)


def _statuses(params: Any) -> list[str]:
    values = [value for value in params.getlist("status") if value != ""]
    for value in values:
        if value not in JobStatus.values:
            raise BadRequest(f"Invalid status {value!r}; expected one of ({', '.join(JobStatus.values)})")
    return values


class QueueJobsView(QueueAPIView):
    @extend_schema(
        operation_id="list_queue_jobs", tags=TAGS, summary="List Queue Jobs",
        parameters=[
            OpenApiParameter("status", REPEATABLE, OpenApiParameter.QUERY, required=False, explode=True, description="Status filter; repeatable"),
            OpenApiParameter("session_id", REPEATABLE, OpenApiParameter.QUERY, required=False, explode=True, description="Session filter; repeatable"),
            query_param("user_id", "Only jobs submitted by this user"),
            query_param("limit", "Jobs per page (1 to 1000)", OpenApiTypes.INT, default=20),
            query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1),
            query_param("sort_by", f"One of {', '.join(operations.SORTABLE)}; others are ignored", default="created_at"),
            query_param("sort_order", "asc or desc", enum=("asc", "desc"), default="desc"),
        ],
        responses={200: PaginatedQueueJobsOut, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        window = page(params, max_limit=1000)
        filters = operations.JobFilters(
            statuses=_statuses(params), session_ids=[value for value in params.getlist("session_id") if value], user_id=params.get("user_id") or None,
        )
        jobs, total = operations.queue_job_list(
            filters=filters, sort_by=params.get("sort_by") or "created_at", descending=sort_order_param(params), offset=window.offset, limit=window.limit,
        )
        return Response(envelope([render_job(job) for job in jobs], window, total))


class QueueJobView(QueueAPIView):
    @extend_schema(operation_id="get_queue_job", tags=TAGS, summary="Get Queue Job", parameters=[JOB_ID], responses={200: QueueJobOut, **ERRORS})
    def get(self, request: Request, job_id: str) -> Response:
        return Response(render_job(operations.queue_job_get(job_id=job_id)))


class QueueJobRequeueView(QueueAPIView):
    @extend_schema(
        operation_id="requeue_queue_job", tags=TAGS, summary="Requeue Failed Queue Job",
        parameters=[
            JOB_ID,
            query_param("clear_cancellation", "Override a cancellation that still stands", OpenApiTypes.BOOL, default=False),
            query_param("force", "Requeue a job failed within the lease (its worker may still run)", OpenApiTypes.BOOL, default=False),
        ],
        request=None, responses={200: QueueJobOut, 409: ErrorOut, **ERRORS},
    )
    def post(self, request: Request, job_id: str) -> Response:
        params = request.query_params
        job = operations.queue_job_requeue(
            job_id=job_id, clear_cancellation=boolean(params, "clear_cancellation", False), force=boolean(params, "force", False),
        )
        return Response(render_job(job))


class QueueStatsView(QueueAPIView):
    @extend_schema(operation_id="get_queue_stats", tags=TAGS, summary="Queue Stats", responses={200: QueueStatsOut, 401: ErrorOut, 403: ErrorOut})
    def get(self, request: Request) -> Response:
        return Response(queue_stats())
