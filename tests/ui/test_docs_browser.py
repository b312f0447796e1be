"""The API docs as a new user meets them in Chromium: Swagger UI's "Try it out" on the run
endpoint works without editing anything (issue 19: it was a 422)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_try_it_out_on_the_run_endpoint_runs_the_demo_agent_as_it_stands(browsing, live_api, monkeypatch) -> None:
    # make run without a key: the demo agent on the offline model (a fixture may have set one)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    call_command("bootstrap", stdout=open("/dev/null", "w"))  # the demo agent, as make run seeds it
    page = browsing.page()
    sent: list[dict] = []
    page.on("request", lambda request: request.method == "POST" and sent.append(parse_qs(request.post_data or "")))
    page.goto("/docs#/Agents/create_agent_run")
    operation = page.locator("#operations-Agents-create_agent_run")
    expect(operation.locator(".opblock-body")).to_be_visible()  # deep linking opened it
    operation.locator(".try-out__btn").click()
    expect(operation.locator("input[placeholder=agent_id]")).to_have_value("demo")
    operation.locator(".execute").click()

    status = operation.locator(".live-responses-table .response .response-col_status")
    expect(status).to_have_text("200")
    reply = json.loads(operation.locator(".live-responses-table .response-col_description pre").first.inner_text())
    assert (reply["agent_id"], reply["status"]) == ("demo", "COMPLETED")
    # What was sent: the message and stream=false, and no optional field with a placeholder in it.
    (form,) = sent
    assert (form["message"], form["stream"]) == (["Hello"], ["false"])
    assert [name for name, values in form.items() if "string" in values] == []
    assert page.errors == []
