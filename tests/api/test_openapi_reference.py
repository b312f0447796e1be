"""Our OpenAPI document against AgentOS 3.1.10's: the same operations, ids and query parameters.

``agentos_operations.json`` holds, for every operation in AgentOS 3.1.10's own document (every
optional feature on; ``../shared/reference/agentos-openapi.json`` beside the project), its
operationId and the names of its query parameters. Code generated from either document then
calls the same methods with the same arguments. To refresh it from a newer document::

    python - <<'PY'
    import json
    ref = json.load(open("../shared/reference/agentos-openapi.json"))
    ops = {f"{m.upper()} {p}": {"operationId": o.get("operationId"),
                                "query": sorted(x["name"] for x in o.get("parameters", []) if x.get("in") == "query")}
           for p, item in ref["paths"].items() for m, o in item.items() if m in ("get", "post", "put", "patch", "delete")}
    json.dump({"about": "…", "operations": ops}, open("tests/api/agentos_operations.json", "w"), indent=1, sort_keys=True)
    PY
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db

REFERENCE = json.loads((Path(__file__).parent / "agentos_operations.json").read_text())["operations"]
# The families later issues build; until then they answer as AgentOS does for a feature not configured.
NOT_BUILT = {
    "authz", "company", "filesystem", "users",
}

# Optional query parameters this server adds to an AgentOS operation, for its own chat UI. Code
# generated from AgentOS's document never sends them, and gets AgentOS's answers without them.
EXTENSIONS = {
    "GET /sessions": {"q", "origin"}, "GET /approvals": {"created_after", "created_before"},
    # The conversation's active branch by default; every version on request (the chat's switcher).
    "GET /sessions/{session_id}/runs": {"branches"}, "GET /sessions/{session_id}/run-previews": {"branches"},
    # The monthly rows (Agno computes only daily ones); without it GET /metrics answers AgentOS's daily rows.
    "GET /metrics": {"aggregation_period"},
    "POST /eval-runs": {"background"},
}


def our_operations(client) -> dict[str, dict]:
    document = client.get("/openapi.json").json()
    return {
        f"{method.upper()} {path}": operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }


def test_every_operation_is_agentos_own_with_its_id_and_query_parameters(client) -> None:
    ours = our_operations(client)
    assert sorted(set(ours) - set(REFERENCE)) == []  # nothing AgentOS does not have
    for key, operation in ours.items():
        query = sorted(p["name"] for p in operation.get("parameters", []) if p["in"] == "query" and p["name"] not in EXTENSIONS.get(key, ()))
        assert (operation["operationId"], query) == (REFERENCE[key]["operationId"], REFERENCE[key]["query"]), key


def test_what_is_not_served_yet_belongs_to_a_family_of_a_later_issue(client) -> None:
    missing = set(REFERENCE) - set(our_operations(client))
    assert {key.split(" ")[1].split("/")[1] for key in missing} <= NOT_BUILT, sorted(missing)
