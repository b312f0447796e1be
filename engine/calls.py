"""Helpers for turning model tool calls into Python calls and back into text."""
from __future__ import annotations

import json
from typing import Any


def parse_arguments(arguments: str) -> tuple[dict[str, Any], str | None]:
    if not arguments or not arguments.strip():
        return {}, None
    try:
        value = json.loads(arguments)
    except ValueError as exc:
        return {}, f"Error while decoding function arguments: {exc}\n\nPlease make sure we can json.loads() the arguments and retry."
    if value == []:
        return {}, None
    if not isinstance(value, dict):
        return {}, "Function arguments are not a valid JSON object.\n\n Please fix and retry."
    return value, None


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def call_str(name: str, args: dict[str, Any] | None, width: int = 80) -> str:
    """Agno's ``FunctionCall.get_call_str`` with its default 80-column terminal."""
    if args is None:
        return f"{name}()"
    max_arg = max(20, (width - len(name) - 4) // 2)
    shown = {k: ("..." if isinstance(v, str) and len(v) > max_arg else v) for k, v in args.items()}
    text = f"{name}({', '.join(f'{k}={v}' for k, v in shown.items())})"
    return f"{name}(...)" if len(text) > width else text
