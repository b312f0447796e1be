"""A factory component in the chat: its factory_input_schema is a setup form above the message
box; a required field left empty is marked and nothing is sent; filled in, the run is built from it
(and a continue sends it again)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessions.models import Run

from .conftest import wait_until
from .test_chat_browser import IDLE, last_reply, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_factorys_setup_fields_are_its_factory_input(browsing, make_user, settings):
    settings.AGENT_MODULES = [*settings.AGENT_MODULES, "tests.api.factory_agents"]
    make_user("alice")
    page = browsing.chat_as("alice")
    page.select_option("#agent-picker", "assistant")
    expect(page.locator(".factory-fields")).to_have_count(0)  # not a factory: no setup
    page.select_option("#agent-picker", "tenant-assistant")
    setup = page.locator(".factory-fields")
    expect(setup.locator("legend")).to_have_text("Tenant assistant's setup (factory_input)")
    plan = setup.locator('input[name="plan"]')
    send(page, "hello")
    expect(plan).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".msg-user")).to_have_count(0)
    plan.fill("pro")
    send(page, '/call lookup {"item": "ink"}')
    page.wait_for_selector(IDLE)
    expect(last_reply(page)).to_contain_text("ink looked up with key-alice")
    (run,) = wait_until(lambda: [r for r in Run.objects.for_user("alice") if r.component_id == "tenant-assistant" and r.status == "COMPLETED"], message="the run")
    assert "Serve a customer on the pro plan." in run.run_data["messages"][0]["content"]
    assert page.errors == []
