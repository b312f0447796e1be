"""The chat UI's own endpoints, beside the AgentOS API: what AgentOS has no route for (reply feedback)."""
