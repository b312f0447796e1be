"""MCP servers an operator allow-lists (MCP_SERVERS) are toolkits ``mcp:<name>`` a database agent is
given in the admin; the demo's planets agent uses the bundled stdio server. Runs go through the API
against the real server processes."""
from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents.registry import agent_get
from agents.services.definitions import definition_create
from agents.toolkits import toolkit_choices
from tests.agents.test_make_run_demo import make_run, run  # noqa: F401 (make_run: a fixture)
from tests.security.conftest import auth, jwt_server, token  # noqa: F401 (jwt_server: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = "python -m mcp_server.demo_tools"
MARS = "Mars: 2 moon(s), a day of 24.7 hours, 1.52 AU from the Sun."


def test_allow_listed_servers_are_toolkits_an_operator_can_pick(settings):
    settings.MCP_SERVERS = {"demo": DEMO, "docs": "https://mcp.example.com/mcp"}
    offered = dict(toolkit_choices())

    settings.MCP_SERVERS = {}
    none = dict(toolkit_choices())

    assert offered["mcp:demo"] == f"MCP: demo: The tools of the MCP server {DEMO} (allow-listed in MCP_SERVERS)."
    assert offered["mcp:docs"] == "MCP: docs: The tools of the MCP server https://mcp.example.com/mcp (allow-listed in MCP_SERVERS)."
    assert sorted(set(offered) - set(none)) == ["mcp:demo", "mcp:docs"]


def test_the_admin_form_offers_the_allow_listed_servers(client, django_user_model, settings):
    settings.MCP_SERVERS = {"demo": DEMO}
    client.force_login(django_user_model.objects.create_superuser("op", password="pw-for-tests"))

    page = client.get(reverse("admin:agents_agentdefinition_add")).content.decode()

    assert 'value="mcp:demo"' in page


def test_a_server_off_the_allow_list_cannot_be_saved_on_an_agent(settings):
    settings.MCP_SERVERS = {}

    with pytest.raises(ValidationError, match="Unknown toolkits: mcp:demo"):
        definition_create(agent_id="planets", name="Planets", model="offline:demo", tools=["mcp:demo"])


def test_a_database_agent_calls_an_allow_listed_servers_tool_through_the_api(client, settings, jwt_server):
    settings.MCP_SERVERS = {"demo": DEMO}
    definition_create(agent_id="planets", name="Planets", model="offline:demo", tools=["mcp:demo"])

    listed = client.get("/agents/planets", **auth(token("alice"))).json()["tools"]["tools"]
    body = run(client, "/agents/planets/runs", '/call planet_facts {"name": "Mars"}')

    assert [tool["name"] for tool in listed] == ["planet_facts", "count_words", "whoami"]
    assert listed[0]["parameters"] == {
        "type": "object", "title": "planet_factsArguments", "properties": {"name": {"title": "Name", "type": "string"}}, "required": ["name"],
    }

    (tool,) = body["tools"]
    assert (tool["tool_name"], tool["result"], tool["tool_call_error"]) == ("planet_facts", MARS, False)
    assert body["status"] == "COMPLETED"


def test_an_allow_listed_server_on_a_private_address_fails_the_call_not_the_run(client, settings, jwt_server):
    settings.MCP_SERVERS = {"intranet": "http://127.0.0.1:9/mcp"}  # refused by the address guard
    settings.HTTP_FETCH_ALLOW_HOSTS = []
    definition_create(agent_id="intranet", name="Intranet", model="offline:demo", tools=["mcp:intranet"])

    body = run(client, "/agents/intranet/runs", '/call search {"query": "holidays"}')
    (toolkit,) = agent_get("intranet").build("alice").tools

    assert body["status"] == "COMPLETED"
    assert body["tools"] == []  # the refused server offered no tools: nothing was called
    assert toolkit.functions() == []
    assert toolkit.last_error == (
        "MCP server 'mcp:intranet' refused: Refusing to fetch 127.0.0.1: it resolves to 127.0.0.1 (loopback address) "
        "(allow it explicitly with allow_hosts)"
    )


def test_the_demo_planets_agent_answers_with_the_bundled_mcp_server(client, make_run):
    body = run(client, "/agents/demo-planets/runs", '/call planet_facts {"name": "Mars"}')

    (tool,) = body["tools"]
    assert (tool["tool_name"], tool["result"]) == ("planet_facts", MARS)
    assert MARS in body["content"]


def test_the_demo_planets_agent_asks_before_counting_words(client, make_run):
    paused = run(client, "/agents/demo-planets/runs", '/call count_words {"text": "one two three"}')
    (tool,) = paused["tools"]
    done = client.post(
        f"/agents/demo-planets/runs/{paused['run_id']}/continue",
        {"session_id": paused["session_id"], "stream": "false", "tools": json.dumps([{**tool, "confirmed": True}])},
        **auth(token("alice")),
    ).json()

    assert (paused["status"], tool["tool_name"], tool["requires_confirmation"]) == ("PAUSED", "count_words", True)
    assert (done["status"], done["tools"][0]["result"]) == ("COMPLETED", "3")


def test_a_code_agents_mcp_tools_pause_for_the_user_and_wait_for_an_operators_approval(client, settings, jwt_server):
    from approvals.models import Approval

    settings.AGENT_MODULES = ["tests.agents.mcp_agents"]

    confirm = run(client, "/agents/gated-planets/runs", '/call count_words {"text": "one two three"}')
    approve = run(client, "/agents/gated-planets/runs", '/call planet_facts {"name": "Mars"}')

    assert (confirm["status"], confirm["tools"][0]["requires_confirmation"], confirm["tools"][0].get("result")) == ("PAUSED", True, None)
    assert (approve["status"], approve["tools"][0]["approval_type"]) == ("PAUSED", "required")
    approval = Approval.objects.for_user("alice").get(pk=approve["tools"][0]["approval_id"])
    assert (approval.status, approval.tool_name) == ("pending", "planet_facts")
    done = client.post(
        f"/agents/gated-planets/runs/{confirm['run_id']}/continue",
        {"session_id": confirm["session_id"], "stream": "false", "tools": json.dumps([{**confirm["tools"][0], "confirmed": True}])},
        **auth(token("alice")),
    ).json()
    assert (done["status"], done["tools"][0]["result"]) == ("COMPLETED", "3")
