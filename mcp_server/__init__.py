"""The platform as an MCP server (``/mcp``), and the small MCP server the demo's agent uses."""
