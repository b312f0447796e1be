"""MCP_SERVERS, the allow-list of MCP servers: ``name=command`` or ``name=url`` entries, checked at start-up."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from agno_site.settings.envtools import named_targets

DEFAULT = "demo=python -m mcp_server.demo_tools"


def test_unset_is_the_bundled_demo_server(monkeypatch):
    monkeypatch.delenv("MCP_SERVERS", raising=False)

    assert named_targets("MCP_SERVERS", DEFAULT) == {"demo": "python -m mcp_server.demo_tools"}


def test_commands_and_urls_by_name(monkeypatch):
    monkeypatch.setenv("MCP_SERVERS", "docs=https://mcp.example.com/mcp, files = npx -y @modelcontextprotocol/server-filesystem /srv")

    assert named_targets("MCP_SERVERS", DEFAULT) == {
        "docs": "https://mcp.example.com/mcp", "files": "npx -y @modelcontextprotocol/server-filesystem /srv",
    }


def test_none_allows_none(monkeypatch):
    monkeypatch.setenv("MCP_SERVERS", "none")

    assert named_targets("MCP_SERVERS", DEFAULT) == {}


@pytest.mark.parametrize("value, error", [
    ("python -m x", "MCP_SERVERS: 'python -m x' is not name=command or name=url"),
    ("Docs=https://x.example/mcp", "MCP_SERVERS: 'Docs=https://x.example/mcp' is not name=command or name=url"),
    ("a=x, a=y", "MCP_SERVERS: 'a' is named twice"),
    ("a=https:///mcp", "MCP_SERVERS: 'https:///mcp' has no host"),
])
def test_a_malformed_entry_stops_start_up_naming_it(monkeypatch, value, error):
    monkeypatch.setenv("MCP_SERVERS", value)

    with pytest.raises(ImproperlyConfigured) as raised:
        named_targets("MCP_SERVERS", DEFAULT)
    assert str(raised.value).startswith(error)
