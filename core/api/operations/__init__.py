"""What the API docs say about each operation: its summary and description, by operationId.

The views' docstrings are written for the people who maintain them ("Subclasses declare
``scope_family``…"); drf-spectacular would otherwise publish them as the operations'
descriptions. Every operation's user-facing text lives in this package instead, applied to the
document by ``document_operations`` (a postprocessing hook, SPECTACULAR_SETTINGS), whatever view
serves it:
a view added later gets its text by adding its operationId to ``runs`` or ``families``, and
tests/api/test_operation_docs.py fails for any operation of the document that is missing.

The wording is AgentOS's own where the operation behaves the same
(``../shared/reference/agentos-openapi.json``), and says what this server does where it differs.
The texts live in ``runs`` (discovery, agents, teams, workflows) and ``families`` (every other
family), one operationId each.
"""
from __future__ import annotations

from typing import Any

from .families import FAMILY_OPERATIONS
from .runs import RUN_OPERATIONS

# operationId -> (summary, description). Descriptions are Markdown.
OPERATIONS: dict[str, tuple[str, str]] = {**RUN_OPERATIONS, **FAMILY_OPERATIONS}
if len(OPERATIONS) != len(RUN_OPERATIONS) + len(FAMILY_OPERATIONS):
    raise AssertionError(f"an operationId has two texts: {sorted(RUN_OPERATIONS.keys() & FAMILY_OPERATIONS.keys())}")

_METHODS = {"get", "post", "put", "patch", "delete"}

# Operations whose id AgentOS gives to another operation too (both "get_config"), by method and path.
BY_PATH: dict[tuple[str, str], tuple[str, str]] = {
    ("get", "/components/{component_id}/configs/{version}"): (
        "Get Config Version",
        "Get one version of a component by number. A caller who may not change components gets "
        "published versions only: a draft is as missing as a version that does not exist.",
    ),
}


def operation_text(path: str, method: str, operation_id: str | None) -> tuple[str, str] | None:
    """The (summary, description) of an operation: its own by path where its id is shared."""
    return BY_PATH.get((method, path)) or OPERATIONS.get(operation_id or "")


def document_operations(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Give every operation of the document its summary and description from ``OPERATIONS``.

    An operation missing from the map keeps no description rather than a docstring written for
    maintainers; the test suite fails until it is added."""
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            documented = operation_text(path, method, operation.get("operationId"))
            if documented is None:
                operation.pop("description", None)
                continue
            operation["summary"], operation["description"] = documented
    return result


# Example values a form body starts with in Swagger UI's "Try it out", by operationId: together
# they make a request that runs as it stands (against the demo agent `make run` seeds).
FORM_EXAMPLES: dict[str, dict[str, Any]] = {
    "create_agent_run": {"message": "Hello", "stream": False},
}
# Path parameters' examples: the demo agent, so "Try it out" starts with an agent that exists.
PATH_EXAMPLES = {"agent_id": "demo"}
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def form_examples(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Swagger UI fills each form field with a sample of its schema (``string``, ``0``, ``true``)
    unless the schema has an example, and sends every filled field: ``output_schema=string``
    is then a 422. Optional fields without a default start empty (``""``, ``[]``: the server
    reads an empty field as absent); FORM_EXAMPLES gives the fields that need a value one that works."""
    schemas = result.get("components", {}).get("schemas", {})
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter["name"] in PATH_EXAMPLES:
                    parameter.setdefault("example", PATH_EXAMPLES[parameter["name"]])
            content = operation.get("requestBody", {}).get("content", {})
            refs = {content[kind]["schema"].get("$ref", "") for kind in _FORM_TYPES if kind in content}
            for ref in refs:
                schema = schemas.get(ref.rsplit("/", 1)[-1])
                if schema is None:
                    continue
                examples = FORM_EXAMPLES.get(operation.get("operationId"), {})
                required = set(schema.get("required", []))
                for name, field in schema.get("properties", {}).items():
                    if name in examples:
                        field["example"] = examples[name]
                    elif name not in required and field.get("format") != "binary" \
                            and not {"example", "default", "enum"} & set(field):
                        field["example"] = [] if field.get("type") == "array" else ""
    return result
