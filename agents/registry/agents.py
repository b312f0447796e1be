"""Agents stored in the database (``AgentDefinition`` and its versions), beside the code agents:
an entry per agent at its latest published version, built for each run's user."""
from __future__ import annotations

import logging
from typing import Any

from engine import Agent
from engine.guardrails import GUARDRAILS, Guardrail, guardrail_by_name
from engine.models import model_from_definition
from engine.tools.toolkit import Toolkit
from learnings.machines import learning_machine

from ..knowledge import named_knowledge
from ..post_hooks import named_post_hooks
from .code import code_agents
from .entries import AgentEntry

logger = logging.getLogger("agents.registry")


def named_guardrails(names: Any) -> list[Guardrail]:
    """A stored version's guardrails, by name (``GUARDRAILS``), new for each build. A name this
    release does not ship (a row edited outside the admin) is left out, with a warning."""
    found = []
    for name in names or []:
        if name in GUARDRAILS:
            found.append(guardrail_by_name(name))
        else:
            logger.warning("unknown guardrail %r in a stored definition is ignored", name)
    return found




def build_from_version(version: Any, user_id: str | None) -> Agent:
    from ..toolkits import TOOLKITS

    toolkits: list[Toolkit] = [TOOLKITS[toolkit_id].build(user_id) for toolkit_id in version.tools if toolkit_id in TOOLKITS]
    definition = version.definition
    return Agent(
        id=definition.agent_id,
        name=definition.name,
        description=definition.description or None,
        instructions=version.instructions or None,
        model=model_from_definition(version.model, version.model_options),
        fallback_models=list(version.fallback_models or []),
        reasoning_model=version.reasoning_model or None,
        tools=toolkits,
        compress_tool_results=version.compress_tool_results,
        add_history_to_context=version.add_history_to_context,
        num_history_runs=version.num_history_runs,
        update_memory_on_run=version.update_memory_on_run,
        add_memories_to_context=version.add_memories_to_context,
        learning=learning_machine(learning_name=version.learning_name, enable_learning=version.enable_learning),
        enable_session_summaries=version.enable_session_summaries,
        search_past_sessions=version.search_past_sessions,
        num_past_sessions_to_search=version.num_past_sessions_to_search,
        tool_call_limit=version.tool_call_limit,
        markdown=version.markdown,
        knowledge=named_knowledge(version.knowledge),
        search_knowledge=version.search_knowledge,
        add_knowledge_to_context=version.add_knowledge_to_context,
        pre_hooks=named_guardrails(version.guardrails),
        post_hooks=named_post_hooks(version.post_hooks),
        token_budget=version.token_budget,
    )


def _db_entry(version: Any) -> AgentEntry:
    definition = version.definition
    return AgentEntry(
        agent_id=definition.agent_id,
        name=definition.name,
        description=definition.description or None,
        source="db",
        build=lambda user_id, version=version: build_from_version(version, user_id),
        version=version.version,
        stage=version.stage,
        template=build_from_version(version, None),
    )


def _active_versions(agent_id: str):
    from ..models import AgentVersion

    return AgentVersion.objects.select_related("definition").filter(definition__is_active=True, definition__agent_id=agent_id)


def agent_versions_published(agent_id: str | None = None, version: int | None = None) -> list[Any]:
    from ..models import AgentVersion, Stage

    versions = AgentVersion.objects.select_related("definition").filter(definition__is_active=True, stage=Stage.PUBLISHED)
    if agent_id is not None:
        versions = versions.filter(definition__agent_id=agent_id)
    if version is not None:
        return list(versions.filter(version=version)[:1])
    if agent_id is not None:
        return list(versions.order_by("-version")[:1])
    versions = versions.order_by("definition__agent_id", "-version")
    latest: dict[int, Any] = {}
    for row in versions:
        latest.setdefault(row.definition_id, row)
    return list(latest.values())


def agent_list() -> list[AgentEntry]:
    code = code_agents()
    stored = [_db_entry(version) for version in agent_versions_published() if version.definition.agent_id not in code]
    return list(code.values()) + sorted(stored, key=lambda entry: entry.agent_id)


def agent_get(agent_id: str, *, version: int | None = None) -> AgentEntry | None:
    """The agent ``agent_id``; ``version`` pins a published version of a database agent.

    A draft is not found, exactly as a missing version is: its instructions and tools are
    unreviewed, so only ``agent_version_get`` (for admins testing it) reaches one.
    """
    code = code_agents()
    if agent_id in code and version is None:
        return code[agent_id]
    found = agent_versions_published(agent_id, version)
    return _db_entry(found[0]) if found else None


def agent_version_get(agent_id: str, *, version: int) -> AgentEntry | None:
    """Stored version ``version`` of a database agent, draft or published (admins only)."""
    found = list(_active_versions(agent_id).filter(version=version)[:1])
    return _db_entry(found[0]) if found else None
