"""Feedback on replies, for the chat UI: ``/chat/api/runs/{run_id}/feedback`` and a session's ratings.

Not an AgentOS route, so not in the AgentOS OpenAPI document (``schema = None``). Only a
logged-in browser user may call it (the Django session, with the CSRF token on writes), and only
on their own runs: another user's run or session is a 404, as a missing one is.
"""
from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.authentication import BrowserSessionAuthentication
from core.api.errors import NotFound
from core.api.views import AgentOSView
from sessions.api.inputs import json_body
from sessions.api.serializers.common import IsoZDateTimeField
from sessions.models import FeedbackRating, RunFeedback
from sessions.selectors import run_feedback_for_session, run_feedback_get, run_get, session_get
from sessions.services import RunNotFound, run_feedback_delete, run_feedback_set
from sessions.services.feedback import COMMENT_MAX_CHARS

RUN_NOT_FOUND = "Run not found"
SESSION_NOT_FOUND = "Session not found"


class FeedbackIn(serializers.Serializer):
    rating = serializers.ChoiceField(choices=FeedbackRating.values)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=COMMENT_MAX_CHARS)


class FeedbackOut(serializers.Serializer):
    run_id = serializers.CharField()
    session_id = serializers.CharField()
    rating = serializers.CharField()
    comment = serializers.CharField()
    created_at = IsoZDateTimeField()
    updated_at = IsoZDateTimeField()


def render_feedback(feedback: RunFeedback) -> dict[str, Any]:
    return dict(FeedbackOut(feedback).data)


class ChatAPIView(AgentOSView):
    """The browser session only: no bearer tokens, and no open access even on an open server."""

    authentication_classes = [BrowserSessionAuthentication]
    authenticated_only = True
    schema = None

    @property
    def user_id(self) -> str:
        return self.principal.user_id  # type: ignore[return-value]  # a browser user always has one


class RunFeedbackView(ChatAPIView):
    """GET, PUT (set or change) and DELETE (withdraw) the caller's rating of one of their runs."""

    def get(self, request: Request, run_id: str) -> Response:
        feedback = run_feedback_get(user_id=self.user_id, run_id=run_id)
        if feedback is None:
            if run_get(user=self.user_id, run_id=run_id) is None:
                raise NotFound(RUN_NOT_FOUND)
            raise NotFound("This reply has no feedback")
        return Response(render_feedback(feedback))

    def put(self, request: Request, run_id: str) -> Response:
        body = json_body(request, FeedbackIn)
        try:
            feedback = run_feedback_set(user_id=self.user_id, run_id=run_id, rating=body["rating"], comment=body.get("comment") or "")
        except RunNotFound:
            raise NotFound(RUN_NOT_FOUND) from None
        return Response(render_feedback(feedback))

    def delete(self, request: Request, run_id: str) -> Response:
        if not run_feedback_delete(user_id=self.user_id, run_id=run_id) and run_get(user=self.user_id, run_id=run_id) is None:
            raise NotFound(RUN_NOT_FOUND)
        return Response(status=204)


class SessionFeedbackView(ChatAPIView):
    """GET the caller's ratings of a session's runs: what the chat shows again on reload."""

    def get(self, request: Request, session_id: str) -> Response:
        if session_get(user=self.user_id, session_id=session_id) is None:
            raise NotFound(SESSION_NOT_FOUND)
        return Response({"data": [render_feedback(item) for item in run_feedback_for_session(user_id=self.user_id, session_id=session_id)]})
