"""A code-defined agent on the bundled MCP server (AGENT_MODULES=tests.agents.mcp_agents), whose
tools pause for the user (count_words) and for an operator's approval (planet_facts)."""
from __future__ import annotations

from engine import Agent
from engine.tools.mcp import MCPTools, python_module_command

AGENTS = [
    Agent(
        id="gated-planets", name="Gated Planets", model="offline:demo",
        tools=[MCPTools(python_module_command("mcp_server.demo_tools"), id="planets", timeout_seconds=60,
                        requires_confirmation_tools=["count_words"], approval_tools=["planet_facts"])],
    ),
]
