"""Switching a conversation's version, for the chat UI: ``POST /chat/api/sessions/{session_id}/branch``.

The chat's ‹ › arrows under an edited message show another version of the conversation from that
message on; the switch is stored (sessions.services.branches), so the next message continues the
branch on screen and the model's history is that branch's. Not an AgentOS route; the browser
session only, on the caller's own sessions (another user's session or run is a 404, as a missing
one is).
"""
from __future__ import annotations

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import NotFound
from sessions.api.inputs import json_body
from sessions.services.branches import BranchRunNotFound, branch_activate

from .feedback import RUN_NOT_FOUND, ChatAPIView


class BranchIn(serializers.Serializer):
    run_id = serializers.CharField(max_length=64)


class SessionBranchView(ChatAPIView):
    """POST: make the branch through ``run_id`` (a version of one message) the active one; the
    answer lists the active branch's runs, first turn first."""

    def post(self, request: Request, session_id: str) -> Response:
        body = json_body(request, BranchIn)
        try:
            path = branch_activate(owner_id=self.user_id, session_id=session_id, run_id=body["run_id"])
        except BranchRunNotFound:
            raise NotFound(RUN_NOT_FOUND) from None
        return Response({"session_id": session_id, "active_run_ids": path})
