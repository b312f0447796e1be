"""``/service-accounts``: bearer tokens for services (``sa:<id>``), minted by a JWT caller.

The token is returned once; only its hash is stored. A service account acts only on its own
data unless it holds the admin scope, which only an admin may grant. It holds only scopes its
creator holds (403 naming the others).
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import F
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.models import AccessToken, TokenKind
from core.querysets import window
from core.scopes import Scope, holds_admin, parse_scopes
from core.services.tokens import InvalidScopes, ScopesNotHeld, TokenNameTaken, access_token_create, access_token_revoke
from core.tenancy import scope_queryset

from .errors import Conflict, Forbidden, NotFound, Unauthorized, invalid
from .params import boolean, envelope, page, sort_order_param
from .schema import ErrorOut, PaginationInfoOut, ValidationErrorOut, query_param
from .views import AgentOSView


class ScopeIn(serializers.Serializer):
    scope = serializers.CharField(max_length=200)
    effect = serializers.ChoiceField(["allow", "deny"], default="allow")


class ServiceAccountIn(serializers.Serializer):
    name = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", max_length=64)
    scopes = ScopeIn(many=True, required=False, default=list)
    expires_in_days = serializers.IntegerField(min_value=1, max_value=3650, default=90)
    never_expires = serializers.BooleanField(default=False)
    allow_privileged_scopes = serializers.BooleanField(default=False)


class ScopeOut(serializers.Serializer):
    id = serializers.CharField()
    raw = serializers.CharField()
    namespace = serializers.CharField()
    sub_namespace = serializers.CharField(allow_null=True)
    permission = serializers.CharField()
    value = serializers.CharField()


class ServiceAccountOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    principal = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    token_prefix = serializers.CharField()
    scopes = ScopeOut(many=True)
    created_at = serializers.IntegerField()
    expires_at = serializers.IntegerField(allow_null=True)
    last_used_at = serializers.IntegerField(allow_null=True)
    revoked_at = serializers.IntegerField(allow_null=True)
    created_by = serializers.CharField(allow_null=True)
    token = serializers.CharField(required=False, help_text="Only in the creation response")


class PaginatedServiceAccountsOut(serializers.Serializer):
    data = ServiceAccountOut(many=True)
    meta = PaginationInfoOut()


# The columns a list may be sorted by; any other sort_by sorts by created_at, as in AgentOS.
SORTABLE = ("created_at", "name", "expires_at", "last_used_at", "revoked_at")


def _epoch(value) -> int | None:
    return int(value.timestamp()) if value is not None else None


def _scope_out(raw: str) -> dict[str, Any]:
    parsed = Scope.parse(raw)
    assert parsed is not None
    return {
        "id": raw,
        "raw": raw,
        "namespace": parsed.resource,
        "sub_namespace": None if parsed.resource_id == "*" else parsed.resource_id,
        "permission": "allow",
        "value": parsed.action,
    }


def service_account_out(token: AccessToken, secret: str | None = None) -> dict[str, Any]:
    body = {
        "id": str(token.pk),
        "name": token.name,
        "principal": token.principal_id,
        "user_id": token.user_id,
        "token_prefix": token.token_prefix,
        "scopes": [_scope_out(raw) for raw in token.scopes],
        "created_at": _epoch(token.created_at),
        "expires_at": _epoch(token.expires_at),
        "last_used_at": _epoch(token.last_used_at),
        "revoked_at": _epoch(token.revoked_at),
        "created_by": token.created_by or None,
    }
    if secret is not None:
        body["token"] = secret
    return body


class ServiceAccountsView(AgentOSView):
    scope_family = "service_accounts"

    @extend_schema(
        operation_id="list_service_accounts_service_accounts_get",
        tags=["Service Accounts"],
        parameters=[
            query_param("include_revoked", "List revoked accounts too", OpenApiTypes.BOOL, default=True),
            query_param("limit", "Items per page (1 to 100)", OpenApiTypes.INT, default=20),
            query_param("page", "Page number, from 1 (needs limit)", OpenApiTypes.INT, default=1),
            query_param("sort_by", f"One of {', '.join(SORTABLE)}; any other value sorts by created_at", default="created_at"),
            query_param("sort_order", "Sort order", enum=("asc", "desc"), default="desc"),
        ],
        responses={200: PaginatedServiceAccountsOut, 401: ErrorOut, 403: ErrorOut, 422: ValidationErrorOut},
    )
    def get(self, request):
        params = request.query_params
        wanted = page(params, max_limit=100)
        include_revoked = boolean(params, "include_revoked", True)
        descending = sort_order_param(params)
        column = params.get("sort_by") if params.get("sort_by") in SORTABLE else "created_at"
        tokens = scope_queryset(AccessToken.objects, self.principal.read_scope()).filter(kind=TokenKind.SERVICE)
        if not include_revoked:
            tokens = tokens.filter(revoked_at__isnull=True)
        total = tokens.count()
        # Never-set times (no expiry, never used, not revoked) last either way; the id breaks ties.
        order = F(column).desc(nulls_last=True) if descending else F(column).asc(nulls_last=True)
        rows = window(tokens.order_by(order, "-pk" if descending else "pk"), offset=wanted.offset, limit=wanted.limit)
        return Response(envelope([service_account_out(token) for token in rows], wanted, total))

    @extend_schema(
        operation_id="create_service_account_service_accounts_post",
        tags=["Service Accounts"],
        request=ServiceAccountIn,
        responses={201: ServiceAccountOut, 401: ErrorOut, 403: ErrorOut, 409: ErrorOut, 422: ValidationErrorOut},
    )
    def post(self, request):
        principal = self.principal
        if principal.via != "jwt":
            raise Unauthorized("JWT authentication is required to mint a service account.")
        body = ServiceAccountIn(data=request.data if isinstance(request.data, dict) else {})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        scopes = [entry["scope"] for entry in data["scopes"] if entry["effect"] == "allow"]
        if any(entry["effect"] == "deny" for entry in data["scopes"]):
            raise invalid(["body", "scopes"], "deny scopes are not supported; list only what the account may do")
        # A non-admin asking for the admin scope is refused below, as for any scope it does not hold.
        if principal.is_admin and holds_admin(parse_scopes(scopes)) and not data["allow_privileged_scopes"]:
            raise invalid(["body", "scopes"], f"{settings.ADMIN_SCOPE} needs an admin caller and allow_privileged_scopes=true")
        try:
            token, secret = access_token_create(
                name=data["name"],
                kind=TokenKind.SERVICE,
                user_id=principal.user_id,
                scopes=scopes,
                ttl_days=None if data["never_expires"] else data["expires_in_days"],
                created_by=principal.user_id or "",
                granted_by=principal,
            )
        except ScopesNotHeld as exc:
            raise Forbidden(str(exc)) from None
        except InvalidScopes as exc:
            raise invalid(["body", "scopes"], str(exc)) from None
        except TokenNameTaken as exc:
            raise Conflict(str(exc)) from None
        return Response(service_account_out(token, secret), status=status.HTTP_201_CREATED)


class ServiceAccountDetailView(AgentOSView):
    scope_family = "service_accounts"

    @extend_schema(
        operation_id="revoke_service_account_service_accounts__service_account_id__delete",
        tags=["Service Accounts"],
        description="Revoke a service account at once. Idempotent: revoking a revoked account is a 204 too.",
        responses={204: None, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut},
    )
    def delete(self, request, service_account_id: str):
        valid_id = service_account_id.isdigit() and len(service_account_id) <= 18
        if not valid_id or not access_token_revoke(token_id=int(service_account_id), user=self.principal.read_scope(), kind=TokenKind.SERVICE):
            raise NotFound(f"Service account '{service_account_id}' not found")
        return Response(status=status.HTTP_204_NO_CONTENT)
