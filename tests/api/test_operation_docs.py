"""The API docs speak to the API's users: every operation's summary and description come from
core/api/operations/, never from a docstring written for the code's maintainers."""
from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from core.api.operations import OPERATIONS, operation_text

pytestmark = pytest.mark.django_db

REFERENCE = json.loads((Path(__file__).parent / "agentos_operations.json").read_text())["operations"]


def operations(client) -> dict[str, dict]:
    document = client.get("/openapi.json").json()
    return {
        f"{method.upper()} {path}": operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }


def _views(patterns) -> list:
    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found += _views(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            callback = pattern.callback
            found.append(getattr(callback, "cls", None) or getattr(callback, "view_class", None) or callback)
    return found


def docstrings() -> list[str]:
    """Every docstring of every view the URLs serve: the classes (and their bases) and their methods."""
    texts = set()
    for view in _views(get_resolver().url_patterns):
        owners = inspect.getmro(view) if inspect.isclass(view) else (view,)
        for owner in owners:
            if owner is object:
                continue
            texts.add(inspect.getdoc(owner) or "")
            for member in vars(owner).values() if inspect.isclass(owner) else ():
                function = getattr(member, "__func__", member)
                if callable(function):
                    texts.add(inspect.getdoc(function) or "")
    return [text for text in texts if len(text) >= 20]


def test_every_operation_has_a_summary_and_a_description_from_the_map(client) -> None:
    for key, operation in operations(client).items():
        assert operation["operationId"] in OPERATIONS, f"{key}: add {operation['operationId']!r} to core/api/operations/"
        method, path = key.split(" ", 1)
        assert (operation.get("summary"), operation.get("description")) == operation_text(path, method.lower(), operation["operationId"]), key
        assert operation["summary"].strip() and len(operation["description"].strip()) >= 30, key


def test_no_description_comes_from_a_docstring(client) -> None:
    texts = docstrings()
    assert any("scope_family" in text for text in texts)  # the docstrings the docs used to show are seen
    for key, operation in operations(client).items():
        description = " ".join(operation["description"].split())
        for text in texts:
            flat = " ".join(text.split())
            assert description not in flat and flat not in description, (key, text)


def test_the_main_operation_says_what_it_does(client) -> None:
    run = operations(client)["POST /agents/{agent_id}/runs"]
    assert run["summary"] == "Create Agent Run"
    assert run["description"].startswith("Execute an agent with a message")
    assert "scope" not in run["description"]


def test_the_map_documents_only_operations_agentos_has() -> None:
    ids = {entry["operationId"] for entry in REFERENCE.values()}
    assert sorted(set(OPERATIONS) - ids) == []
