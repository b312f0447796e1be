"""An operator marks tools of an allow-listed MCP server as needing the user's confirmation or an
operator's approval (admin: MCP server tool policies); an admin agent given the server then pauses
on those calls like on any tool that needs a human, and continues once decided. End to end: the
admin's own forms, runs and continues through the API, the real bundled MCP server."""
from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from agents.models import MCPToolPolicy
from agents.services.definitions import definition_create
from tests.agents.test_make_run_demo import run
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = "python -m mcp_server.demo_tools"
COUNT = '/call count_words {"text": "one two three"}'
MARS = '/call planet_facts {"name": "Mars"}'


@pytest.fixture
def operator(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))
    return client


def continue_run(client, agent_id: str, paused: dict, confirmed: bool) -> dict:
    tools = [{**tool, "confirmed": confirmed} for tool in paused["tools"]]
    response = client.post(
        f"/agents/{agent_id}/runs/{paused['run_id']}/continue",
        {"session_id": paused["session_id"], "stream": "false", "tools": json.dumps(tools)}, **auth(token("alice")),
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_an_operator_sets_a_servers_policy_and_its_calls_pause_until_decided(client, operator, settings, jwt_server):
    from approvals.models import Approval

    settings.MCP_SERVERS = {"demo": DEMO}
    definition_create(agent_id="planets", name="Planets", model="offline:demo", tools=["mcp:demo"])
    before = run(client, "/agents/planets/runs", COUNT)

    add_page = operator.get(reverse("admin:agents_mcptoolpolicy_add")).content.decode()
    added = operator.post(reverse("admin:agents_mcptoolpolicy_add"), {"server": "demo"})
    policy = MCPToolPolicy.objects.get(server="demo")
    change_url = reverse("admin:agents_mcptoolpolicy_change", args=[policy.pk])
    change_page = operator.get(change_url).content.decode()
    saved = operator.post(change_url, {"requires_confirmation_tools": ["count_words"], "approval_tools": ["planet_facts"], "_save": "Save"})
    policy.refresh_from_db()

    assert 'value="demo"' in add_page
    assert (added.status_code, added["Location"]) == (302, change_url)
    for tool in ("planet_facts", "count_words", "whoami"):
        assert f'value="{tool}"' in change_page
    assert saved.status_code == 302, saved.content
    assert (policy.requires_confirmation_tools, policy.approval_tools) == (["count_words"], ["planet_facts"])
    assert (before["status"], before["tools"][0]["result"]) == ("COMPLETED", "3")  # no policy yet: called at once

    paused = run(client, "/agents/planets/runs", COUNT)
    (tool,) = paused["tools"]
    assert (paused["status"], tool["tool_name"], tool["requires_confirmation"], tool.get("result")) == ("PAUSED", "count_words", True, None)
    done = continue_run(client, "planets", paused, confirmed=True)
    assert (done["status"], done["tools"][0]["result"]) == ("COMPLETED", "3")
    rejected = continue_run(client, "planets", run(client, "/agents/planets/runs", COUNT), confirmed=False)
    assert (rejected["status"], rejected["tools"][0]["confirmed"]) == ("COMPLETED", False)
    assert rejected["tools"][0].get("result") != "3"

    awaiting = run(client, "/agents/planets/runs", MARS)
    (tool,) = awaiting["tools"]
    assert (awaiting["status"], tool["approval_type"]) == ("PAUSED", "required")
    approval = Approval.objects.for_user("alice").get(pk=tool["approval_id"])
    assert (approval.status, approval.tool_name) == ("pending", "planet_facts")


def test_a_policy_applies_from_the_next_run_and_a_tool_taken_off_it_runs_at_once(client, settings, jwt_server):
    settings.MCP_SERVERS = {"demo": DEMO}
    definition_create(agent_id="planets", name="Planets", model="offline:demo", tools=["mcp:demo"])
    policy = MCPToolPolicy.objects.create(server="demo", requires_confirmation_tools=["count_words"])

    paused = run(client, "/agents/planets/runs", COUNT)
    policy.requires_confirmation_tools = []
    policy.save(update_fields=["requires_confirmation_tools", "updated_at"])
    direct = run(client, "/agents/planets/runs", COUNT)

    assert paused["status"] == "PAUSED"
    assert (direct["status"], direct["tools"][0]["result"]) == ("COMPLETED", "3")


def test_an_unreachable_servers_page_says_why_and_keeps_the_choices(operator, settings):
    settings.MCP_SERVERS = {"intranet": "http://127.0.0.1:9/mcp"}  # refused by the address guard
    settings.HTTP_FETCH_ALLOW_HOSTS = []
    policy = MCPToolPolicy.objects.create(server="intranet", requires_confirmation_tools=["search"])

    page = operator.get(reverse("admin:agents_mcptoolpolicy_change", args=[policy.pk]), follow=True).content.decode()

    assert "The server&#x27;s tools could not be listed: MCP server &#x27;mcp:intranet&#x27; refused" in page
    assert re.search(r'name="requires_confirmation_tools" value="search"[^>]*checked', page)
    assert not re.search(r'name="approval_tools" value="search"[^>]*checked', page)
    assert "search (not listed by the server now)" in page


def test_the_add_form_offers_only_allow_listed_servers_without_a_policy(operator, settings):
    settings.MCP_SERVERS = {"demo": DEMO, "docs": "https://mcp.example.com/mcp"}
    MCPToolPolicy.objects.create(server="docs")

    page = operator.get(reverse("admin:agents_mcptoolpolicy_add")).content.decode()
    refused = operator.post(reverse("admin:agents_mcptoolpolicy_add"), {"server": "elsewhere"})

    assert 'value="demo"' in page and 'value="docs"' not in page
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert list(MCPToolPolicy.objects.values_list("server", flat=True)) == ["docs"]
