"""Request body parsers that refuse what the database cannot store, as a 422 and never a 500.

PostgreSQL's text and jsonb refuse NUL characters; JSON numbers like ``1e400`` parse as
infinity, which jsonb refuses too; and very deep nesting exhausts the parser's stack.
"""
from __future__ import annotations

import json
import math
from typing import Any

from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from .errors import invalid


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def check_storable(value: Any, location: list[str | int]) -> None:
    pending: list[tuple[Any, list[str | int]]] = [(value, location)]
    while pending:  # iterative: deep nesting must not exhaust the stack
        item, where = pending.pop()
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


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw:
            return {}
        try:
            text = raw.decode((parser_context or {}).get("encoding") or "utf-8")
            data = json.loads(text, parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise invalid(["body"], f"JSON decode error: {exc}" if not isinstance(exc, RecursionError) else "JSON decode error: nested too deeply", kind="json_invalid") from None
        check_storable(data, ["body"])
        return data


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
