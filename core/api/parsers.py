"""Request body parsers that refuse what the database cannot store, as a 422 and never a 500.

PostgreSQL's text and jsonb refuse NUL characters; JSON numbers like ``1e400`` parse as
infinity, which jsonb refuses too; and deep nesting exhausts the stack, in the parser (a
``RecursionError``) or later, in whatever walks the value recursively (``json.dumps`` when it is
stored, serializers, ``copy.deepcopy``). So every JSON a client sends, a body, a form field or a
WebSocket frame, is read by ``load_json``, which bounds its depth (``JSON_MAX_DEPTH``).
"""
from __future__ import annotations

import json
import math
from typing import Any

from django.conf import settings
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from .errors import invalid


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


class StrictFormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        for name, values in data.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                raise invalid(["body", name], "Null characters are not allowed.", kind="null_characters_not_allowed")
        return data


class StrictMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        for name, values in parsed.data.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                raise invalid(["body", name], "Null characters are not allowed.", kind="null_characters_not_allowed")
        return parsed
