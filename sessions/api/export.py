"""``GET /sessions/{session_id}/export/{markdown|json}``: a conversation to keep, as a file.

An extension of this server (AgentOS has no export), so it is left out of the AgentOS OpenAPI
document. It reads through the caller's scope like every /sessions route (``sessions:read``):
another user's session is a 404, as a missing one is. The chat's *Export* menu links here.
"""
from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse
from django.utils.text import slugify
from rest_framework.request import Request

from core.api.errors import NotFound
from sessions.transcript import conversation_transcript, transcript_json, transcript_markdown, transcript_title

from .base import SessionsAPIView

FORMATS = {"markdown": ("md", "text/markdown; charset=utf-8"), "json": ("json", "application/json")}


class SessionExportView(SessionsAPIView):
    schema = None

    def get(self, request: Request, session_id: str, export_format: str) -> HttpResponse:
        if export_format not in FORMATS:
            raise NotFound(f"No export format '{export_format}': ask for markdown or json")
        transcript = conversation_transcript(user=self.principal.read_scope(request.query_params.get("user_id")), session_id=session_id)
        if transcript is None:
            raise NotFound(f"Session with id '{session_id}' not found")
        if export_format == "json":
            body = json.dumps(transcript_json(transcript), indent=2, ensure_ascii=False)
        else:
            body = transcript_markdown(transcript, site_name=settings.AGENT_OS_NAME)
        extension, content_type = FORMATS[export_format]
        response = HttpResponse(body, content_type=content_type)
        filename = f"{slugify(transcript_title(transcript))[:80] or 'conversation'}.{extension}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        response["Cache-Control"] = "no-store"
        return response
