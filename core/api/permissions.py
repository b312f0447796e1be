"""The route gate: every API view declares what it needs, and undeclared views fail closed.

A view sets ``scope_family`` (e.g. "sessions"), optionally ``scope_actions`` (method -> action)
and ``scope_resource_kwarg`` (the URL kwarg naming one resource, e.g. "agent_id"), or
``public = True`` / ``authenticated_only = True``.
"""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from core.auth import Principal

from .authentication import missing_credentials_detail

DEFAULT_ACTIONS = {"GET": "read", "HEAD": "read", "OPTIONS": "read", "POST": "write", "PUT": "write", "PATCH": "write", "DELETE": "delete"}


def required(view, method: str) -> tuple[str, str, str | None] | None:
    family = getattr(view, "scope_family", None)
    if family is None:
        if getattr(view, "public", False) or getattr(view, "authenticated_only", False):
            return None
        raise ImproperlyConfigured(f"{type(view).__name__} declares no scope_family (nor public/authenticated_only)")
    actions = {**DEFAULT_ACTIONS, **getattr(view, "scope_actions", {})}
    action = actions.get(method.upper(), "write")
    kwarg = getattr(view, "scope_resource_kwarg", None)
    resource_id = view.kwargs.get(kwarg) if kwarg else None
    return family, action, resource_id


class AgentOSPermission(BasePermission):
    def has_permission(self, request, view) -> bool:
        need = required(view, request.method)  # raises for an undeclared view, before anything else
        if getattr(view, "public", False):
            return True
        principal = request.user
        if not isinstance(principal, Principal):
            raise exceptions.NotAuthenticated(missing_credentials_detail())
        if need is None:
            return True
        family, action, resource_id = need
        if principal.can(family, action, resource_id):
            return True
        raise exceptions.PermissionDenied(f"Insufficient permissions. Required scope(s): {family}:{action}")
