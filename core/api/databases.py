"""``POST /databases/all/migrate`` and ``/databases/{db_id}/migrate``: AgentOS's schema upgrade.

This server has one database (its id is ``/config``'s ``os_database``), whose schema is
Django's migrations: migrating applies those not applied yet, and a second call applies
nothing. An admin's operation, as AgentOS gates it with ``config:write``: the security key, an
admin token or a token holding ``config:write``, or the open server. Browser users and the
anonymous guests of ``ANONYMOUS_ACCESS=guests`` get 403.
"""
from __future__ import annotations

import logging
from typing import Any

from django.db import OperationalError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.services.executor import in_run_thread
from core.db import database_unavailable
from core.services.schema import schema_migrate

from .errors import BadRequest, Forbidden, NotFound
from .schema import ErrorOut, query_param
from .views import AsyncAgentOSView, database_id

logger = logging.getLogger("agno_site.api")

TAGS = ["Database"]
TARGET_VERSION = query_param(
    "target_version",
    "Not supported here: the schema is always brought to the code's latest migration (400 when given)",
)
MESSAGE = inline_serializer("MigrateResponse", {"message": serializers.CharField()})
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut}
FORBIDDEN = "Insufficient permissions. Required scope(s): config:write"


class MigrateView(AsyncAgentOSView):
    """The migration runs in a run thread (``prepare_post``), which looks after its database
    connection, not in the one thread that every sync view of the process shares."""

    scope_family = "config"  # POST: config:write, AgentOS's scope for these routes

    async def in_thread(self, fn, /, *args: Any, **kwargs: Any) -> Any:
        return await in_run_thread(fn, *args, **kwargs)

    def check_request(self, request: Request) -> None:
        principal = self.principal
        open_server = principal.via == "none" and not principal.guest
        if not (principal.is_admin or principal.scope_enforced or open_server):
            raise Forbidden(FORBIDDEN)  # a scoped token got here holding config:write (the route gate)
        if request.query_params.get("target_version"):
            raise BadRequest(
                "target_version is not supported: this server's schema is its Django migrations, "
                "always brought to the latest (manage.py migrate <app> <migration> goes back)"
            )

    def migrate(self) -> str | None:
        """None when done, else why it failed (logged)."""
        try:
            applied = schema_migrate()
        except OperationalError as exc:
            if database_unavailable(exc):
                raise  # a 503 the client may retry, as for any request
            logger.exception("migrating the database failed")
            return f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 (AgentOS reports any failure in the answer)
            logger.exception("migrating the database failed")
            return f"{type(exc).__name__}: {exc}"
        if applied:
            logger.info("migrated the database: applied %s", ", ".join(applied))
        return None


class MigrateAllView(MigrateView):
    def prepare_post(self, request: Request) -> Response:
        self.check_request(request)
        failure = self.migrate()
        if failure is not None:  # AgentOS's multi-status answer, naming the database that failed
            return Response({"message": "Migrated 0/1 databases to latest version", "failed": {database_id(): failure}}, status=207)
        return Response({"message": "All databases migrated successfully to latest version"})

    @extend_schema(
        operation_id="migrate_all_databases",
        tags=TAGS,
        parameters=[TARGET_VERSION],
        request=None,
        responses={200: MESSAGE, 207: OpenApiTypes.OBJECT, **ERRORS},
    )
    async def post(self, request: Request) -> Response:
        return self.prepared


class MigrateDatabaseView(MigrateView):
    def prepare_post(self, request: Request, db_id: str) -> Response:
        self.check_request(request)
        if db_id != database_id():
            raise NotFound("Database not found")
        failure = self.migrate()
        if failure is not None:
            return Response({"detail": f"Failed to migrate database: {failure}"}, status=500)
        return Response({"message": "Database migrated successfully to latest version"})

    @extend_schema(
        operation_id="migrate_database",
        tags=TAGS,
        parameters=[OpenApiParameter("db_id", OpenApiTypes.STR, OpenApiParameter.PATH), TARGET_VERSION],
        request=None,
        responses={200: MESSAGE, 500: ErrorOut, **ERRORS},
    )
    async def post(self, request: Request, db_id: str) -> Response:
        return self.prepared
