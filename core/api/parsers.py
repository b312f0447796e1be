"""Request body parsers that refuse what the database cannot store, as a 422 and never a 500.

PostgreSQL's text and jsonb refuse NUL characters; JSON numbers like ``1e400`` parse as
infinity, which jsonb refuses too; and deep nesting exhausts the stack, in the parser (a
``RecursionError``) or later, in whatever walks the value recursively (``json.dumps`` when it is
stored, serializers, ``copy.deepcopy``). So every JSON a client sends, a body, a form field or a
WebSocket frame, is read by ``load_json``, which bounds its depth (``JSON_MAX_DEPTH``).

The multipart parser of the run, continue and resume forms bounds uploaded files, as a 413:
``UPLOAD_MAX_FILE_BYTES`` each and ``UPLOAD_MAX_TOTAL_BYTES`` together, refused while they
stream in, before more is buffered. (Form fields are bounded by Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE``: ``RequestDataTooBig``, which the run forms answer as a 413.)
"""
from __future__ import annotations

import json
import math
from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import MemoryFileUploadHandler
from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, FormParser, JSONParser, MultiPartParser, get_encoding

from .errors import PayloadTooLarge, body_too_large, invalid


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def _too_deep(location: list[str | int]) -> Exception:
    limit = settings.JSON_MAX_DEPTH
    return invalid(location, f"JSON decode error: nested more than {limit} levels deep", kind="json_invalid", ctx={"max_depth": limit})


def check_storable(value: Any, location: list[str | int]) -> None:
    limit = len(location) + settings.JSON_MAX_DEPTH
    pending: list[tuple[Any, list[str | int]]] = [(value, location)]
    while pending:  # iterative: deep nesting must not exhaust the stack
        item, where = pending.pop()
        if isinstance(item, (dict, list)) and len(where) >= limit:
            raise _too_deep(location)
        if isinstance(item, dict):
            for key, child in item.items():
                if "\x00" in key:
                    raise invalid(where, "Null characters are not allowed.", kind="null_characters_not_allowed")
                pending.append((child, where + [key]))
        elif isinstance(item, list):
            pending.extend((child, where + [index]) for index, child in enumerate(item))
        elif isinstance(item, str) and "\x00" in item:
            raise invalid(where, "Null characters are not allowed.", kind="null_characters_not_allowed")
        elif isinstance(item, float) and not math.isfinite(item):
            raise invalid(where, "Input should be a finite number", kind="finite_number")


def load_json(text: str | bytes, location: list[str | int]) -> Any:
    """A client's JSON: too deep or not storable is a 422 at ``location``; not JSON at all is a
    ``ValueError`` (what that means is the caller's: a 422, a dropped field, an error frame)."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise _too_deep(location) from None
    check_storable(data, location)
    return data


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw:
            return {}
        try:
            return load_json(raw.decode((parser_context or {}).get("encoding") or "utf-8"), ["body"])
        except ValueError as exc:  # UnicodeDecodeError is one
            raise invalid(["body"], f"JSON decode error: {exc}", kind="json_invalid") from None


def fields_too_large() -> PayloadTooLarge:
    return PayloadTooLarge(body_too_large())


def file_too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"File too large: an uploaded file may take at most {settings.UPLOAD_MAX_FILE_BYTES} bytes")


def uploads_too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"Uploads too large: a request's uploads may take at most {settings.UPLOAD_MAX_TOTAL_BYTES} bytes in total")


def _refuse_null_fields(data) -> None:
    for name, values in data.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            raise invalid(["body", name], "Null characters are not allowed.", kind="null_characters_not_allowed")


class StrictFormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        _refuse_null_fields(data)
        return data


class BoundedUploadHandler(MemoryFileUploadHandler):
    """Uploaded files in memory, each refused (413) as soon as it passes ``UPLOAD_MAX_FILE_BYTES``,
    or all of them once they pass ``UPLOAD_MAX_TOTAL_BYTES``: nothing above a bound is buffered,
    and no upload is ever written to a temporary file."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.activated = True  # whatever the request's length: the bounds below keep memory small
        self.total = 0

    def receive_data_chunk(self, raw_data, start):
        self.total += len(raw_data)
        if start + len(raw_data) > settings.UPLOAD_MAX_FILE_BYTES:
            raise file_too_large()
        if self.total > settings.UPLOAD_MAX_TOTAL_BYTES:
            raise uploads_too_large()
        return super().receive_data_chunk(raw_data, start)


class StrictMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        # DRF's parse, with this form's own upload handler instead of the project's defaults.
        parser_context = parser_context or {}
        meta = parser_context["request"].META.copy()
        meta["CONTENT_TYPE"] = media_type
        try:
            data, files = DjangoMultiPartParser(meta, stream, [BoundedUploadHandler()], get_encoding(parser_context)).parse()
        except MultiPartParserError as exc:
            raise ParseError(f"Multipart form parse error - {exc}") from None
        _refuse_null_fields(data)
        return DataAndFiles(data, files)
