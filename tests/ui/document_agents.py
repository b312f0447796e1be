"""A code agent over the deployment's default knowledge base (each user's documents and the shared
ones), for the browser tests of sources that link into My documents (test_chat_sources.py)."""
from __future__ import annotations

from engine import Agent
from knowledge.services import BaseSource

AGENTS = [Agent(id="kb-docs-agent", name="KB Docs Agent", knowledge=BaseSource("documents"))]
