"""The cron helper of My schedules: ``/chat/api/schedules/preview?cron_expr=&timezone=``.

Not an AgentOS route (``schema = None``): the next five fire times of an expression in a time
zone, parsed exactly as a schedule's would be (scheduler.cron), so the page shows what will
happen, and an expression a schedule would refuse is refused here with the same reason.
"""
from __future__ import annotations

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import Unprocessable
from scheduler.cron import cron_problem, next_ticks, timezone_problem

from .feedback import ChatAPIView


class SchedulePreviewView(ChatAPIView):
    def get(self, request: Request) -> Response:
        expr = (request.query_params.get("cron_expr") or "").strip()
        zone = request.query_params.get("timezone") or "UTC"
        problem = timezone_problem(zone) or (cron_problem(expr) if expr else "Invalid cron expression: it is empty (an on-demand schedule never fires by itself)")
        if problem:
            raise Unprocessable(problem)
        ticks = next_ticks(expr, zone, timezone.now(), 5)
        return Response({"cron_expr": expr, "timezone": zone, "next": [tick.isoformat() for tick in ticks]})
