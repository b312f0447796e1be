"""A conversation's share link, for the chat UI: ``/chat/api/sessions/{session_id}/share``.

GET says whether the conversation is shared (and its link), PUT shares it as it stands now (a new
link, or the existing one's copy updated), DELETE revokes the link. Only the signed-in owner,
through the browser session (``ChatAPIView``): another user's conversation is a 404, as a
missing one is.
"""
from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.errors import NotFound
from sessions.api.serializers.common import iso_z
from sessions.selectors import session_get

from ..models import SharedConversation
from ..shares import ConversationNotFound, share_get, share_revoke, share_save
from .feedback import SESSION_NOT_FOUND, ChatAPIView


def render_share(request: Request, share: SharedConversation) -> dict[str, Any]:
    path = reverse("chat:shared", kwargs={"token": share.token})
    return {"url": request.build_absolute_uri(path), "path": path, "title": share.title, "shared_at": iso_z(share.shared_at)}


class SessionShareView(ChatAPIView):
    def get(self, request: Request, session_id: str) -> Response:
        share = share_get(user=self.user_id, session_id=session_id)
        if share is None:
            if session_get(user=self.user_id, session_id=session_id) is None:
                raise NotFound(SESSION_NOT_FOUND)
            raise NotFound("This conversation is not shared")
        return Response(render_share(request, share))

    def put(self, request: Request, session_id: str) -> Response:
        try:
            share = share_save(user=self.user_id, session_id=session_id)
        except ConversationNotFound:
            raise NotFound(SESSION_NOT_FOUND) from None
        return Response(render_share(request, share))

    def delete(self, request: Request, session_id: str) -> Response:
        if not share_revoke(user=self.user_id, session_id=session_id) and session_get(user=self.user_id, session_id=session_id) is None:
            raise NotFound(SESSION_NOT_FOUND)
        return Response(status=204)
