"""JSON schemas for tool parameters, from type hints and docstrings."""
from __future__ import annotations

import enum
import inspect
import re
import types
from typing import Any, Literal, Union, get_args, get_origin

_JSON_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema of one annotation. Unknown types give ``{}`` (anything)."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation is type(None):
        return {"type": "null"}
    if annotation in _JSON_SCALARS:
        return {"type": _JSON_SCALARS[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([member.value for member in annotation])
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return _enum_schema(list(args))
    if origin is Union or origin is types.UnionType:
        options = [arg for arg in args if arg is not type(None)]
        # Optional[X] is X for the model: leaving the argument out is how it says "none".
        if len(options) == 1:
            return type_schema(options[0])
        return {"anyOf": [type_schema(option) for option in options]}
    if annotation in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        item = args[0] if args and args[0] is not Ellipsis else Any
        return {"type": "array", "items": type_schema(item)}
    if annotation is dict or origin is dict:
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2 and type_schema(args[1]):
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    if hasattr(annotation, "model_json_schema"):  # a pydantic model, if the caller uses pydantic
        return dict(annotation.model_json_schema())
    return {}


def type_name(annotation: Any) -> str:
    """Short type name for user-input fields (``"str"``, ``"int"``), as Agno serialises them."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return type_name(options[0])
    if isinstance(annotation, type):
        return annotation.__name__
    if annotation is inspect.Parameter.empty:
        return "str"
    return str(annotation)


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {_JSON_SCALARS.get(type(value)) for value in values}
    schema: dict[str, Any] = {"enum": values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


_SECTION_RE = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_GOOGLE_ARG_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_PARAM_RE = re.compile(r"^:param\s+(?:\w+\s+)?(\w+):\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """``(description, {param: description})`` from a Google-style (or ``:param:``) docstring.

    The description is the first paragraph.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    first_paragraph: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION_RE.match(line.strip()) or line.strip().startswith(":"):
            break
        first_paragraph.append(line.strip())
    params: dict[str, str] = {}
    section = None
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        sphinx = _SPHINX_PARAM_RE.match(stripped)
        if sphinx:
            current, section = sphinx.group(1), "sphinx"
            params[current] = sphinx.group(2).strip()
            continue
        header = _SECTION_RE.match(stripped)
        if header:
            section = "args" if header.group(1) in ("Args", "Arguments", "Parameters") else None
            current = None
            base_indent = -1
            continue
        if section == "args" and stripped:
            indent = len(line) - len(line.lstrip())
            if base_indent < 0:
                base_indent = indent
            match = _GOOGLE_ARG_RE.match(stripped)
            if indent <= base_indent and match:
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
            elif current is not None:
                params[current] = f"{params[current]} {stripped}".strip()
        elif section == "sphinx" and stripped and not stripped.startswith(":") and current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
        elif not stripped and section == "sphinx":
            section, current = None, None
    return " ".join(first_paragraph), params
