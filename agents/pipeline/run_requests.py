"""A run's request from the fields that ask for it: the one builder of ``RunRequest``.

The run routes' form (agents.api.forms) and a schedule's fire (its payload, as the fields the
route would get) both build theirs here, so a schedule's payload is read exactly as the route
reads it, and refused for what the route refuses.
"""
from __future__ import annotations

import base64
import json
import mimetypes
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from core.api import params
from core.api.errors import BadRequest, PayloadTooLarge, invalid, missing
from core.api.parsers import file_too_large, load_json, uploads_too_large

from .runs import RunRequest

FILES_METADATA_LIMIT = 8000
TEXT_TYPES = {"application/json", "application/xml", "application/x-yaml", "application/yaml", "application/csv"}
DOCUMENT_EXTENSIONS = {"pdf", "csv", "docx", "txt", "json", "md", "html", "xml", "yaml", "yml"}


def _json_or_none(data: Any, name: str) -> Any:
    """A JSON form field; one that is not JSON is dropped, as AgentOS drops it (one too deep to
    handle safely is a 422)."""
    raw = data.get(name)
    if raw is None or raw == "":
        return None
    try:
        return load_json(raw, ["body", name])
    except (TypeError, ValueError):
        return None


def object_or_dropped(data: Any, name: str) -> dict[str, Any] | None:
    value = _json_or_none(data, name)
    return value if isinstance(value, dict) else None


def _knowledge_filters(data: Any) -> dict[str, Any] | None:
    """``knowledge_filters``: a JSON object of metadata keys to values, as a plain dict in
    AgentOS (not JSON: dropped). AgentOS turns ``{"op": ...}`` objects and lists of them into
    filter expressions; the knowledge sources here match on key and value only, so those are a
    422 rather than filters silently ignored."""
    value = _json_or_none(data, "knowledge_filters")
    if value is None:
        return None
    if not isinstance(value, dict) or "op" in value:
        raise invalid(
            ["body", "knowledge_filters"],
            "Filter expressions are not supported: pass a JSON object of metadata keys to values",
        )
    return value or None


def bounded_text(data: Any, name: str) -> str | None:
    """A message-like field (``message``, a continue's ``input``), refused (413) above
    ``RUN_MAX_MESSAGE_CHARS``: it is stored with the run and sent to the model whole."""
    value = data.get(name)
    if value is not None and len(value) > settings.RUN_MAX_MESSAGE_CHARS:
        raise PayloadTooLarge(f"{name} too long: at most {settings.RUN_MAX_MESSAGE_CHARS} characters")
    return value


def _media(data: Any, name: str) -> list[dict[str, Any]] | None:
    if data.get(name) in (None, ""):
        return None
    value = _json_or_none(data, name)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise invalid(["body", name], f"Invalid {name}: expected a JSON array of objects")
    return value


def _check_media_sizes(inline: list[dict[str, Any]], uploads: list[Any]) -> None:
    """Inline media (base64 in a JSON field) count as uploads, at their encoded size, so a file
    is bounded the same whether it comes as a file part or inline."""
    total = sum(upload.size for upload in uploads)
    for item in inline:
        size = len(json.dumps(item))
        if size > settings.UPLOAD_MAX_FILE_BYTES:
            raise file_too_large()
        total += size
    if total > settings.UPLOAD_MAX_TOTAL_BYTES:
        raise uploads_too_large()


def _uploaded_files(uploads: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Uploaded ``files`` parts: images become image inputs, documents file inputs with content."""
    images: list[dict[str, Any]] = []
    documents: list[dict[str, Any]] = []
    for upload in uploads:
        content_type = (upload.content_type or mimetypes.guess_type(upload.name or "")[0] or "").split(";")[0].strip().lower()
        extension = (upload.name or "").rsplit(".", 1)[-1].lower() if "." in (upload.name or "") else ""
        body = upload.read()
        if content_type.startswith("image/"):
            images.append({"content": base64.b64encode(body).decode(), "mime_type": content_type, "format": extension or content_type.split("/")[1]})
        elif content_type.startswith("text/") or content_type in TEXT_TYPES or extension in DOCUMENT_EXTENSIONS:
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            entry = {"mime_type": content_type or "application/octet-stream", "filename": upload.name, "format": extension or None}
            if text is not None:
                entry["content"] = text
            else:
                entry["content_base64"] = base64.b64encode(body).decode()
            documents.append({key: value for key, value in entry.items() if value is not None})
        else:
            raise BadRequest("Unsupported file type")
    return images, documents


def run_request_build(data: Mapping[str, Any], *, uploads: Sequence[Any] = ()) -> tuple[RunRequest, bool]:
    """A RunRequest and the ``background`` flag from a run's form fields (``POST /agents/{id}/runs``
    and the team and workflow routes; a schedule's payload, as its fire's fields), exactly as
    AgentOS reads them: a field the route would refuse is the API's 4xx (core.api.errors).
    ``uploads``: the request's ``files`` parts."""
    message = bounded_text(data, "message")
    if message is None:
        raise missing(["body", "message"])
    metadata = _json_or_none(data, "metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise BadRequest("Invalid metadata parameter: expected a JSON object")
    output_schema = None
    if data.get("output_schema") not in (None, ""):
        output_schema = _json_or_none(data, "output_schema")
        if not isinstance(output_schema, dict) or output_schema.get("type") != "object":
            raise invalid(["body", "output_schema"], "Invalid output_schema: the root must be a JSON schema with \"type\": \"object\"")
    files_metadata = data.get("files_metadata")
    if files_metadata is not None and len(str(files_metadata).encode()) > FILES_METADATA_LIMIT:
        raise invalid(["body", "files_metadata"], f"files_metadata must be at most {FILES_METADATA_LIMIT} bytes", kind="string_too_long")
    images = _media(data, "images")
    input_files = _media(data, "input_files")
    audio, videos = (_media(data, name) for name in ("audio", "videos"))  # validated like AgentOS; not used yet
    _check_media_sizes([*(images or []), *(input_files or []), *(audio or []), *(videos or [])], list(uploads))
    uploaded_images, uploaded_documents = _uploaded_files(list(uploads))
    images = (images or []) + uploaded_images or None
    files = (input_files or []) + uploaded_documents or None
    add_history = data.get("add_history_to_context")
    run = RunRequest(
        message=str(message),
        session_id=(data.get("session_id") or None),
        user_id=(data.get("user_id") or None),
        stream=params.boolean(data, "stream", True, where="body"),
        stream_events=params.boolean(data, "stream_events", True, where="body"),
        session_state=object_or_dropped(data, "session_state"),
        metadata=metadata if isinstance(metadata, dict) else None,
        dependencies=object_or_dropped(data, "dependencies"),
        knowledge_filters=_knowledge_filters(data),
        output_schema=output_schema,
        add_history_to_context=None if add_history in (None, "") else params.boolean(data, "add_history_to_context", True, where="body"),
        images=images,
        files=files,
        version=params.integer(data, "version", None, where="body"),
        factory_input=object_or_dropped(data, "factory_input"),
    )
    return run, params.boolean(data, "background", False, where="body")


__all__ = ["bounded_text", "object_or_dropped", "run_request_build"]
