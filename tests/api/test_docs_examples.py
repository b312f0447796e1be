"""Swagger UI's "Try it out" starts every form with the document's examples: sent as they stand,
they must run (issue 19: every optional field was pre-filled with ``string``, and
``output_schema=string`` is a 422)."""
from __future__ import annotations

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

# What Swagger UI puts in a field whose schema has no example, default or enum.
PLACEHOLDERS = {"string": "string", "integer": 0, "number": 0, "boolean": True}


def swagger_form(schema: dict) -> dict[str, str | list[str]]:
    """The form Swagger UI sends (application/x-www-form-urlencoded: every field, empty ones too)."""
    form = {}
    for name, field in schema["properties"].items():
        if field.get("format") == "binary":
            continue  # a file input starts empty
        if "example" in field:
            value = field["example"]
        elif "default" in field:
            value = field["default"]
        elif "enum" in field:
            value = field["enum"][0]
        elif field["type"] == "array":
            value = ["string"]
        else:
            value = PLACEHOLDERS[field["type"]]
        if isinstance(value, list):
            form[name] = [str(item) for item in value]
        else:
            form[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return form


@pytest.mark.django_db(transaction=True)  # the run executes on a run thread, which sees only committed rows
def test_the_run_form_as_swagger_fills_it_runs_the_demo_agent(client, monkeypatch) -> None:
    # make run without a key: the demo agent on the offline model (a fixture may have set one)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    call_command("bootstrap", stdout=open("/dev/null", "w"))  # the demo agent `make run` seeds
    document = client.get("/openapi.json").json()
    operation = document["paths"]["/agents/{agent_id}/runs"]["post"]
    (agent_id,) = [p.get("example", "demo") for p in operation["parameters"] if p["name"] == "agent_id"]
    reference = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]["$ref"]
    form = swagger_form(document["components"]["schemas"][reference.rsplit("/", 1)[-1]])

    response = client.post(f"/agents/{agent_id}/runs", form)

    assert response.status_code == 200, response.content
    assert (agent_id, form["message"], form["output_schema"], form["session_id"]) == ("demo", "Hello", "", "")
    body = response.json()
    assert (body["agent_id"], body["status"]) == ("demo", "COMPLETED")
    assert "Hello" in body["content"]


def test_no_form_field_starts_with_a_placeholder(client) -> None:
    document = client.get("/openapi.json").json()
    for name in ("RunFormRequest", "ContinueFormRequest", "ResumeFormRequest"):
        schema = document["components"]["schemas"][name]
        for field, value in swagger_form(schema).items():
            assert value not in ("string", "0", ["string"]) or field in schema.get("required", []), (name, field)
