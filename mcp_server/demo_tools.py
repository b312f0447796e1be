"""A small MCP server with offline tools, for the demo's MCP agent and the tests.

Run it as ``python -m mcp_server.demo_tools`` (stdio: an agent's ``MCPTools`` starts it as a
subprocess; allowed by default in ``MCP_ALLOWED_COMMANDS``) or with ``--http PORT`` (streamable
HTTP at ``http://127.0.0.1:PORT/mcp``). It imports no Django and reaches nothing outside.
"""
from __future__ import annotations

import argparse

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

PLANETS = {
    "mercury": {"moons": 0, "day_hours": 4222.6, "distance_au": 0.39},
    "venus": {"moons": 0, "day_hours": 2802.0, "distance_au": 0.72},
    "earth": {"moons": 1, "day_hours": 24.0, "distance_au": 1.0},
    "mars": {"moons": 2, "day_hours": 24.7, "distance_au": 1.52},
    "jupiter": {"moons": 95, "day_hours": 9.9, "distance_au": 5.2},
    "saturn": {"moons": 146, "day_hours": 10.7, "distance_au": 9.54},
    "uranus": {"moons": 28, "day_hours": 17.2, "distance_au": 19.2},
    "neptune": {"moons": 16, "day_hours": 16.1, "distance_au": 30.06},
}

server = MCPServer("agno-site-demo-tools", instructions="Offline facts about the planets, and a word counter.")


@server.tool()
def planet_facts(name: str) -> str:
    """Facts about a planet of the solar system: its moons, the length of its day, its distance
    from the Sun.

    Args:
        name: The planet, e.g. "Mars".
    """
    facts = PLANETS.get(name.strip().lower())
    if facts is None:
        raise ToolError(f"No planet named {name!r}; try one of: {', '.join(p.title() for p in PLANETS)}")
    return (
        f"{name.strip().title()}: {facts['moons']} moon(s), a day of {facts['day_hours']} hours, "
        f"{facts['distance_au']} AU from the Sun."
    )


@server.tool()
def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


@server.tool()
def whoami(ctx: Context) -> str:
    """Say which credential this call carried (the Authorization header over HTTP), to show that
    each user's calls carry their own token."""
    headers = ctx.headers or {}
    return headers.get("authorization") or "no credential (stdio, or none sent)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio")
        return
    server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)


if __name__ == "__main__":
    main()
