"""The agents and teams this server offers: defined in code (``AGENT_MODULES``) or in the database.

Code agents come first, then active database agents at their latest published version. An
entry builds the runtime ``Agent`` for one run (database agents build their toolkits for the
run's user, so per-user resources such as the Workspace folder stay per user).

Teams are one more kind of the same protocol: an ``AGENT_MODULES`` module may export
``TEAMS = [Team(...)]`` beside ``AGENTS``; a ``TeamEntry`` builds the runtime ``Team``. The
services reach either kind through ``entry_get`` / ``entry_version_get``.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings

from .runtime import Agent, Team
from .runtime.tools.toolkit import Toolkit


@dataclass(frozen=True)
class AgentEntry:
    agent_id: str
    name: str
    description: str | None
    source: str  # "code" | "db"
    build: Callable[[str | None], Agent] = field(repr=False, compare=False)
    version: int | None = None
    stage: str | None = None
    # Built once for describing the agent (tools, flags); runs get their own from build().
    template: Agent | None = field(default=None, repr=False, compare=False)

    kind = "agent"  # the component protocol (core.components): what runs, and its session type
    session_type = "agent"

    @property
    def component_id(self) -> str:
        return self.agent_id

    @property
    def is_component(self) -> bool:
        return self.source == "db"


@dataclass(frozen=True)
class TeamEntry:
    """A team, as ``AgentEntry`` is an agent: the same protocol, of kind "team"."""

    team_id: str
    name: str
    description: str | None
    source: str  # "code" | "db"
    build: Callable[[str | None], Team] = field(repr=False, compare=False)
    version: int | None = None
    stage: str | None = None
    template: Team | None = field(default=None, repr=False, compare=False)

    kind = "team"
    session_type = "team"

    @property
    def component_id(self) -> str:
        return self.team_id

    @property
    def is_component(self) -> bool:
        return self.source == "db"


def _load_code_agents(modules: tuple[str, ...]) -> dict[str, AgentEntry]:
    entries: dict[str, AgentEntry] = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        agents = getattr(module, "AGENTS", None)
        if not isinstance(agents, (list, tuple)) or not all(isinstance(agent, Agent) for agent in agents):
            raise TypeError(f"{module_name}.AGENTS must be a list of agents.runtime.Agent")
        for agent in agents:
            if agent.id in entries:
                raise ValueError(f"two code agents share the id {agent.id!r}")
            entries[agent.id] = AgentEntry(
                agent_id=agent.id,
                name=agent.name or agent.id,
                description=agent.description,
                source="code",
                build=lambda user_id, agent=agent: agent,
                template=agent,
            )
    return entries


@lru_cache(maxsize=8)
def _code_agents_for(modules: tuple[str, ...]) -> dict[str, AgentEntry]:
    return _load_code_agents(modules)


def code_agents() -> dict[str, AgentEntry]:
    return _code_agents_for(tuple(settings.AGENT_MODULES))


def _load_code_teams(modules: tuple[str, ...]) -> dict[str, TeamEntry]:
    entries: dict[str, TeamEntry] = {}
    agents = _code_agents_for(modules)
    for module_name in modules:
        module = importlib.import_module(module_name)
        teams = getattr(module, "TEAMS", [])
        if not isinstance(teams, (list, tuple)) or not all(isinstance(team, Team) for team in teams):
            raise TypeError(f"{module_name}.TEAMS must be a list of agents.runtime.Team")
        for team in teams:
            if team.id in entries or team.id in agents:
                raise ValueError(f"the team id {team.id!r} is taken by another code agent or team")
            entries[team.id] = TeamEntry(
                team_id=team.id, name=team.name or team.id, description=team.description, source="code",
                build=lambda user_id, team=team: team, template=team,
            )
    return entries


@lru_cache(maxsize=8)
def _code_teams_for(modules: tuple[str, ...]) -> dict[str, TeamEntry]:
    return _load_code_teams(modules)


def code_teams() -> dict[str, TeamEntry]:
    return _code_teams_for(tuple(settings.AGENT_MODULES))


def team_list() -> list[TeamEntry]:
    return list(code_teams().values())


def team_get(team_id: str, *, version: int | None = None) -> TeamEntry | None:
    """The team ``team_id`` (code teams have no versions: a version asked of one is not found)."""
    if version is not None:
        return None
    return code_teams().get(team_id)


def team_version_get(team_id: str, *, version: int) -> TeamEntry | None:
    return None


def build_from_version(version: Any, user_id: str | None) -> Agent:
    from .toolkits import TOOLKITS

    toolkits: list[Toolkit] = [TOOLKITS[toolkit_id].build(user_id) for toolkit_id in version.tools if toolkit_id in TOOLKITS]
    definition = version.definition
    return Agent(
        id=definition.agent_id,
        name=definition.name,
        description=definition.description or None,
        instructions=version.instructions or None,
        model=version.model,
        fallback_models=list(version.fallback_models or []),
        reasoning_model=version.reasoning_model or None,
        tools=toolkits,
        add_history_to_context=version.add_history_to_context,
        num_history_runs=version.num_history_runs,
        update_memory_on_run=version.update_memory_on_run,
        add_memories_to_context=version.add_memories_to_context,
        enable_session_summaries=version.enable_session_summaries,
        search_past_sessions=version.search_past_sessions,
        num_past_sessions_to_search=version.num_past_sessions_to_search,
        tool_call_limit=version.tool_call_limit,
        markdown=version.markdown,
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
    from .models import AgentVersion

    return AgentVersion.objects.select_related("definition").filter(definition__is_active=True, definition__agent_id=agent_id)


def _published_versions(agent_id: str | None = None, version: int | None = None) -> list[Any]:
    from .models import AgentVersion, Stage

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
    stored = [_db_entry(version) for version in _published_versions() if version.definition.agent_id not in code]
    return list(code.values()) + sorted(stored, key=lambda entry: entry.agent_id)


def agent_get(agent_id: str, *, version: int | None = None) -> AgentEntry | None:
    """The agent ``agent_id``; ``version`` pins a published version of a database agent.

    A draft is not found, exactly as a missing version is: its instructions and tools are
    unreviewed, so only ``agent_version_get`` (for admins testing it) reaches one.
    """
    code = code_agents()
    if agent_id in code and version is None:
        return code[agent_id]
    found = _published_versions(agent_id, version)
    return _db_entry(found[0]) if found else None


def agent_version_get(agent_id: str, *, version: int) -> AgentEntry | None:
    """Stored version ``version`` of a database agent, draft or published (admins only)."""
    found = list(_active_versions(agent_id).filter(version=version)[:1])
    return _db_entry(found[0]) if found else None



def entry_get(kind: str, component_id: str, *, version: int | None = None) -> AgentEntry | TeamEntry | None:
    """The live component of ``kind`` ("agent" or "team"), or a published version of it."""
    if kind == "team":
        return team_get(component_id, version=version)
    return agent_get(component_id, version=version)


def entry_version_get(kind: str, component_id: str, *, version: int) -> AgentEntry | TeamEntry | None:
    """Any stored version, drafts included (admins only)."""
    if kind == "team":
        return team_version_get(component_id, version=version)
    return agent_version_get(component_id, version=version)
