"""The agents, teams and workflows this server offers: defined in code (``AGENT_MODULES``) or in the database.

Code agents come first, then active database agents at their latest published version. An
entry builds the runtime ``Agent`` for one run (database agents build their toolkits for the
run's user, so per-user resources such as the Workspace folder stay per user).

Teams are one more kind of the same protocol: an ``AGENT_MODULES`` module may export
``TEAMS = [Team(...)]`` beside ``AGENTS``; a ``TeamEntry`` builds the runtime ``Team``. The
services reach either kind through ``entry_get`` / ``entry_version_get``.

Workflows likewise: ``WORKFLOWS = [Workflow(...)]`` in code, and ``WorkflowDefinition`` rows
whose step graphs name live agents, teams and registered functions (``FUNCTIONS = [fn, ...]``
in an ``AGENT_MODULES`` module, by ``__name__``).
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings

from .knowledge import named_knowledge
from learnings.machines import learning_machine
from engine import Agent, Team, Workflow
from engine.guardrails import GUARDRAILS, Guardrail, guardrail_by_name
from .post_hooks import named_post_hooks
from engine.models import model_from_definition
from engine.factory import AgentFactory, ComponentFactory, FactoryContext, TeamFactory, WorkflowFactory
from engine.tools.toolkit import Toolkit
from engine.workflow_config import Executors, StepConfigError, steps_from_config

logger = logging.getLogger(__name__)


def _is_factory(entry: Any) -> bool:
    """Built per request: a whole-definition factory, or a component whose tools are."""
    return entry.factory is not None or bool(getattr(entry.template, "is_factory", False))


def _build_for(entry: Any, context: FactoryContext) -> Any:
    """The component for one run, built from its context (a factory's whole definition), or
    for its user (every other entry)."""
    if entry.factory is not None:
        return entry.factory.build(context)
    if entry.build_with is not None:
        return entry.build_with(context)
    return entry.build(context.user_id)


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
    # A whole-definition factory (runtime.factory): built per request, with no template.
    factory: ComponentFactory | None = field(default=None, repr=False, compare=False)
    # A stored team or workflow: built from the run's whole context, so a factory among its
    # members or steps gets the run's session, state, dependencies and input, not its user alone.
    build_with: Callable[[FactoryContext], Any] | None = field(default=None, repr=False, compare=False)

    kind = "agent"  # the component protocol (core.components): what runs, and its session type
    session_type = "agent"

    is_factory = property(lambda self: _is_factory(self))
    build_for = _build_for

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
    # A whole-definition factory (runtime.factory): built per request, with no template.
    factory: ComponentFactory | None = field(default=None, repr=False, compare=False)
    # A stored team or workflow: built from the run's whole context, so a factory among its
    # members or steps gets the run's session, state, dependencies and input, not its user alone.
    build_with: Callable[[FactoryContext], Any] | None = field(default=None, repr=False, compare=False)

    kind = "team"
    session_type = "team"

    is_factory = property(lambda self: _is_factory(self))
    build_for = _build_for

    @property
    def component_id(self) -> str:
        return self.team_id

    @property
    def is_component(self) -> bool:
        return self.source == "db"


@dataclass(frozen=True)
class WorkflowEntry:
    """A workflow, as ``AgentEntry`` is an agent: the same protocol, of kind "workflow"."""

    workflow_id: str
    name: str
    description: str | None
    source: str  # "code" | "db"
    build: Callable[[str | None], Workflow] = field(repr=False, compare=False)
    version: int | None = None
    stage: str | None = None
    template: Workflow | None = field(default=None, repr=False, compare=False)
    # A whole-definition factory (runtime.factory): built per request, with no template.
    factory: ComponentFactory | None = field(default=None, repr=False, compare=False)
    # A stored team or workflow: built from the run's whole context, so a factory among its
    # members or steps gets the run's session, state, dependencies and input, not its user alone.
    build_with: Callable[[FactoryContext], Any] | None = field(default=None, repr=False, compare=False)

    kind = "workflow"
    session_type = "workflow"

    is_factory = property(lambda self: _is_factory(self))
    build_for = _build_for

    @property
    def component_id(self) -> str:
        return self.workflow_id

    @property
    def is_component(self) -> bool:
        return self.source == "db"


def _load_code_agents(modules: tuple[str, ...]) -> dict[str, AgentEntry]:
    entries: dict[str, AgentEntry] = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        # A module may export only teams, workflows or functions (of agents defined elsewhere, or inline).
        others = any(hasattr(module, name) for name in ("TEAMS", "WORKFLOWS", "FUNCTIONS"))
        agents = getattr(module, "AGENTS", [] if others else None)
        if not isinstance(agents, (list, tuple)) or not all(isinstance(agent, (Agent, AgentFactory)) for agent in agents):
            raise TypeError(f"{module_name}.AGENTS must be a list of engine.Agent (or AgentFactory)")
        for agent in agents:
            if agent.id in entries:
                raise ValueError(f"two code agents share the id {agent.id!r}")
            if isinstance(agent, AgentFactory):
                entries[agent.id] = AgentEntry(
                    agent_id=agent.id, name=agent.name, description=agent.description, source="code",
                    build=_factory_build(agent), factory=agent,
                )
                continue
            entries[agent.id] = AgentEntry(
                agent_id=agent.id,
                name=agent.name or agent.id,
                description=agent.description,
                source="code",
                build=lambda user_id, agent=agent: agent,
                template=agent,
            )
    return entries


def _factory_build(factory: ComponentFactory) -> Callable[[str | None], Any]:
    """A factory entry's ``build(user_id)``, for callers that know only the user (a team's
    member, an eval): the factory gets a context with the user alone."""
    return lambda user_id: factory.build(FactoryContext(user_id=user_id))


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
        if not isinstance(teams, (list, tuple)) or not all(isinstance(team, (Team, TeamFactory)) for team in teams):
            raise TypeError(f"{module_name}.TEAMS must be a list of engine.Team (or TeamFactory)")
        for team in teams:
            if team.id in entries or team.id in agents:
                raise ValueError(f"the team id {team.id!r} is taken by another code agent or team")
            if isinstance(team, TeamFactory):
                entries[team.id] = TeamEntry(
                    team_id=team.id, name=team.name, description=team.description, source="code", build=_factory_build(team), factory=team,
                )
                continue
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


class MemberUnavailable(Exception):
    """A database team names a member that is no longer live (deleted, deactivated, or no
    longer published), or contains itself: the team cannot be built, so it is not offered."""


# The database teams being built on this call path: a cycle stored past validation (a row
# edited outside the admin) stops here rather than recursing without end.
_BUILDING: ContextVar[tuple[str, ...]] = ContextVar("team_building", default=())


def team_from_version(version: Any, members: list[Agent | Team], user_id: str | None) -> Team:
    from .toolkits import TOOLKITS

    definition = version.definition
    return Team(
        members=members,
        id=definition.team_id,
        name=definition.name,
        description=definition.description or None,
        role=version.role or None,
        mode=version.mode,
        model=model_from_definition(version.model, version.model_options),
        instructions=version.instructions or None,
        tools=[TOOLKITS[toolkit_id].build(user_id) for toolkit_id in version.tools if toolkit_id in TOOLKITS],
        compress_tool_results=version.compress_tool_results,
        max_iterations=version.max_iterations,
        member_timeout=version.member_timeout,
        add_history_to_context=version.add_history_to_context,
        num_history_runs=version.num_history_runs,
        update_memory_on_run=version.update_memory_on_run,
        learning=learning_machine(learning_name=version.learning_name, enable_learning=version.enable_learning),
        enable_session_summaries=version.enable_session_summaries,
        markdown=version.markdown,
        knowledge=named_knowledge(version.knowledge),
        search_knowledge=version.search_knowledge,
        add_knowledge_to_context=version.add_knowledge_to_context,
        pre_hooks=named_guardrails(version.guardrails),
        post_hooks=named_post_hooks(version.post_hooks),
        token_budget=version.token_budget,
    )


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


def _member_entries(version: Any) -> list[AgentEntry | TeamEntry]:
    team_id = version.definition.team_id
    path = _BUILDING.get()
    if team_id in path:
        raise MemberUnavailable(f"team {team_id!r} contains itself: {' → '.join([*path, team_id])}")
    token = _BUILDING.set((*path, team_id))
    try:
        entries: list[AgentEntry | TeamEntry] = []
        for member_id in version.members:
            entry = agent_get(member_id) or team_get(member_id, strict=True)
            if entry is None:
                raise MemberUnavailable(f"team {team_id!r} v{version.version}: member {member_id!r} is not a live agent or team")
            entries.append(entry)
        return entries
    finally:
        _BUILDING.reset(token)


def _db_team_entry(version: Any) -> TeamEntry:
    """The team of ``version``; members resolve now (a gone one raises ``MemberUnavailable``)
    and are built for the run's user with the team."""
    members = _member_entries(version)
    definition = version.definition
    return TeamEntry(
        team_id=definition.team_id,
        name=definition.name,
        description=definition.description or None,
        source="db",
        build=lambda user_id: team_from_version(version, [member.build(user_id) for member in members], user_id),
        build_with=lambda context: team_from_version(version, [member.build_for(context) for member in members], context.user_id),
        version=version.version,
        stage=version.stage,
        template=team_from_version(version, [template_of(member) for member in members], None),
    )


def _available(version: Any, *, strict: bool = False) -> TeamEntry | None:
    """The team entry, or None (logged) when a member has gone: it is not offered, so it
    answers "Team not found" rather than failing part-way through a run."""
    try:
        return _db_team_entry(version)
    except MemberUnavailable as exc:
        if strict:  # a sub-team of a team being built: the outer team is unavailable too
            raise
        logger.warning("database team unavailable: %s", exc)
        return None


def _team_versions(team_id: str | None = None, version: int | None = None, *, drafts: bool = False) -> list[Any]:
    """Active database team versions: the latest published of each (or of ``team_id``), or
    exactly ``version`` (drafts included only when ``drafts``)."""
    from .models import Stage, TeamVersion

    versions = TeamVersion.objects.select_related("definition").filter(definition__is_active=True)
    if not drafts:
        versions = versions.filter(stage=Stage.PUBLISHED)
    if team_id is not None:
        versions = versions.filter(definition__team_id=team_id)
    if version is not None:
        return list(versions.filter(version=version)[:1])
    if team_id is not None:
        return list(versions.order_by("-version")[:1])
    latest: dict[int, Any] = {}
    for row in versions.order_by("definition__team_id", "-version"):
        latest.setdefault(row.definition_id, row)
    return list(latest.values())


def team_list() -> list[TeamEntry]:
    """Code teams, then active database teams at their latest published version (a code id
    wins; a team whose member has gone is left out, with a warning in the log)."""
    code = code_teams()
    stored = [_available(version) for version in _team_versions() if version.definition.team_id not in code]
    return list(code.values()) + sorted((entry for entry in stored if entry is not None), key=lambda entry: entry.team_id)


def team_get(team_id: str, *, version: int | None = None, strict: bool = False) -> TeamEntry | None:
    """The team ``team_id``; ``version`` pins a published version of a database team (code
    teams have no versions). A draft is not found, as for agents. ``strict`` (a sub-team
    resolved while its parent is built) raises ``MemberUnavailable`` instead of returning None,
    so the parent is unavailable too and the log names the member that went."""
    code = code_teams()
    if team_id in code:
        return code[team_id] if version is None else None
    found = _team_versions(team_id, version)
    return _available(found[0], strict=strict) if found else None


def team_version_get(team_id: str, *, version: int) -> TeamEntry | None:
    """Stored version ``version`` of a database team, draft or published (admins only)."""
    found = _team_versions(team_id, version, drafts=True)
    return _available(found[0]) if found else None


def member_kind(member_id: str) -> str | None:
    """"agent" or "team" when ``member_id`` names a live one (what a team may list), else None.
    Cheap: reads ids only, builds nothing."""
    from .models import Stage, TeamVersion

    if member_id in code_agents() or _published_versions(member_id):
        return "agent"
    if member_id in code_teams():
        return "team"
    published = TeamVersion.objects.filter(definition__is_active=True, definition__team_id=member_id, stage=Stage.PUBLISHED)
    return "team" if published.exists() else None


def live_member_ids() -> list[tuple[str, str]]:
    """``(id, kind)`` of every live agent and team, code first: what a team may have as members."""
    from .models import Stage, TeamVersion

    agents = [*code_agents(), *(version.definition.agent_id for version in _published_versions())]
    teams = list(code_teams())
    stored = TeamVersion.objects.filter(definition__is_active=True, stage=Stage.PUBLISHED).values_list("definition__team_id", flat=True)
    teams += sorted(set(stored) - set(teams))
    return [(agent_id, "agent") for agent_id in dict.fromkeys(agents)] + [(team_id, "team") for team_id in teams]


def team_cycle(team_id: str, members: list[str]) -> list[str] | None:
    """The path by which ``team_id`` would contain itself with these members, or None.

    Sub-teams are walked at their live (latest published) version; code teams are leaves (their
    members are code objects, never database teams)."""
    from .models import Stage, TeamVersion

    def live_members(sub_team_id: str) -> list[str]:
        version = TeamVersion.objects.filter(definition__team_id=sub_team_id, stage=Stage.PUBLISHED).order_by("-version").first()
        return list(version.members) if version is not None and isinstance(version.members, list) else []

    seen: set[str] = set()

    def walk(path: list[str], member_ids: list[str]) -> list[str] | None:
        for member_id in member_ids:
            if member_id == team_id:
                return [*path, member_id]
            if member_id in seen or member_id in code_teams() or member_id in code_agents():
                continue
            seen.add(member_id)
            found = walk([*path, member_id], live_members(member_id))
            if found:
                return found
        return None

    return walk([team_id], members)


def build_from_version(version: Any, user_id: str | None) -> Agent:
    from .toolkits import TOOLKITS

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



def _load_code_workflows(modules: tuple[str, ...]) -> dict[str, WorkflowEntry]:
    entries: dict[str, WorkflowEntry] = {}
    taken = set(_code_agents_for(modules)) | set(_code_teams_for(modules))
    for module_name in modules:
        module = importlib.import_module(module_name)
        workflows = getattr(module, "WORKFLOWS", [])
        if not isinstance(workflows, (list, tuple)) or not all(isinstance(workflow, (Workflow, WorkflowFactory)) for workflow in workflows):
            raise TypeError(f"{module_name}.WORKFLOWS must be a list of engine.Workflow (or WorkflowFactory)")
        for workflow in workflows:
            if workflow.id in entries or workflow.id in taken:
                raise ValueError(f"the workflow id {workflow.id!r} is taken by another code agent, team or workflow")
            if isinstance(workflow, WorkflowFactory):
                entries[workflow.id] = WorkflowEntry(
                    workflow_id=workflow.id, name=workflow.name, description=workflow.description, source="code",
                    build=_factory_build(workflow), factory=workflow,
                )
                continue
            entries[workflow.id] = WorkflowEntry(
                workflow_id=workflow.id, name=workflow.name or workflow.id, description=workflow.description, source="code",
                build=lambda user_id, workflow=workflow: workflow, template=workflow,
            )
    return entries


@lru_cache(maxsize=8)
def _code_workflows_for(modules: tuple[str, ...]) -> dict[str, WorkflowEntry]:
    return _load_code_workflows(modules)


def code_workflows() -> dict[str, WorkflowEntry]:
    return _code_workflows_for(tuple(settings.AGENT_MODULES))


def _load_code_functions(modules: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    """``FUNCTIONS = [fn, ...]`` of each module, by ``__name__`` (Agno's ``Registry(functions=)``):
    what an admin-composed workflow names as a step's executor, a Loop's end condition, a
    Condition's evaluator or a Router's selector."""
    functions: dict[str, Callable[..., Any]] = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        exported = getattr(module, "FUNCTIONS", [])
        if not isinstance(exported, (list, tuple)) or not all(callable(fn) and hasattr(fn, "__name__") for fn in exported):
            raise TypeError(f"{module_name}.FUNCTIONS must be a list of named functions")
        for fn in exported:
            if fn.__name__ in functions and functions[fn.__name__] is not fn:
                raise ValueError(f"two registered functions share the name {fn.__name__!r}")
            functions[fn.__name__] = fn
    return functions


@lru_cache(maxsize=8)
def _code_functions_for(modules: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    return _load_code_functions(modules)


def code_functions() -> dict[str, Callable[..., Any]]:
    """The registered functions, by id (their ``__name__``), in the order the modules list them."""
    return _code_functions_for(tuple(settings.AGENT_MODULES))


def function_list() -> list[tuple[str, str]]:
    """``(id, the first line of its docstring)`` of every registered function."""
    return [(name, (fn.__doc__ or "").strip().splitlines()[0] if (fn.__doc__ or "").strip() else "") for name, fn in code_functions().items()]


def template_of(entry: AgentEntry | TeamEntry) -> Agent | Team:
    """What a stored team or workflow shows of a member or step before any run: its template; a
    factory has none (it is built per run, maybe only from a factory_input), so a stand-in of its
    id, name and description."""
    if entry.template is not None:
        return entry.template
    if entry.factory is not None:
        if entry.kind == "team":
            return Team([Agent(id=f"{entry.component_id}-member")], id=entry.component_id, name=entry.name, description=entry.description)
        return Agent(id=entry.component_id, name=entry.name, description=entry.description)
    return entry.build(None)


def _template_executors(agents: dict[str, AgentEntry], teams: dict[str, TeamEntry]) -> Executors:
    """Ids resolved to the live agents' and teams' templates; each entry found is kept in
    ``agents`` / ``teams``, so runs build the same ones for their user."""

    def agent(agent_id: str) -> Agent | None:
        entry = agent_get(agent_id)
        if entry is None:
            return None
        agents[agent_id] = entry
        return template_of(entry)

    def team(team_id: str) -> Team | None:
        entry = team_get(team_id)
        if entry is None:
            return None
        teams[team_id] = entry
        return template_of(entry)

    return Executors(agent=agent, team=team, function=code_functions().get)


def workflow_from_version(version: Any, executors: Executors) -> Workflow:
    definition = version.definition
    return Workflow(
        id=definition.workflow_id, name=definition.name, description=definition.description or None,
        steps=steps_from_config(version.steps, executors), version=version.version,
    )


def workflow_steps_check(steps: Any) -> list[str]:
    """What is wrong with a step graph composed in the admin (each problem with its place in
    the graph), or [] when it builds against the live agents, teams and registered functions."""
    try:
        Workflow(id="check", steps=steps_from_config(steps, _template_executors({}, {})))
    except StepConfigError as exc:
        return [f"{path}: {message}" if path else message for path, message in exc.problems]
    except (TypeError, ValueError) as exc:  # the runtime's rules for a whole workflow
        return [str(exc)]
    return []


def _db_workflow_entry(version: Any) -> WorkflowEntry:
    """The workflow of ``version``; its agents and teams resolve now (one gone raises
    ``StepConfigError``), and are built for the run's user with the workflow."""
    agents: dict[str, AgentEntry] = {}
    teams: dict[str, TeamEntry] = {}
    template = workflow_from_version(version, _template_executors(agents, teams))

    def build(user_id: str | None) -> Workflow:
        return build_with(FactoryContext(user_id=user_id))

    def build_with(context: FactoryContext) -> Workflow:
        executors = Executors(
            agent=lambda agent_id: agents[agent_id].build_for(context), team=lambda team_id: teams[team_id].build_for(context),
            function=code_functions().get,
        )
        return workflow_from_version(version, executors)

    definition = version.definition
    return WorkflowEntry(
        workflow_id=definition.workflow_id, name=definition.name, description=definition.description or None, source="db",
        build=build, build_with=build_with, version=version.version, stage=version.stage, template=template,
    )


def _available_workflow(version: Any) -> WorkflowEntry | None:
    """The workflow entry, or None (logged) when an executor it names has gone: it is not
    offered, so it answers "Workflow not found" rather than failing part-way through a run."""
    try:
        return _db_workflow_entry(version)
    except (StepConfigError, TypeError, ValueError) as exc:
        logger.warning("database workflow unavailable: %s v%s: %s", version.definition.workflow_id, version.version, exc)
        return None


def _workflow_versions(workflow_id: str | None = None, version: int | None = None, *, drafts: bool = False) -> list[Any]:
    """Active database workflow versions, as ``_team_versions``."""
    from .models import Stage, WorkflowVersion

    versions = WorkflowVersion.objects.select_related("definition").filter(definition__is_active=True)
    if not drafts:
        versions = versions.filter(stage=Stage.PUBLISHED)
    if workflow_id is not None:
        versions = versions.filter(definition__workflow_id=workflow_id)
    if version is not None:
        return list(versions.filter(version=version)[:1])
    if workflow_id is not None:
        return list(versions.order_by("-version")[:1])
    latest: dict[int, Any] = {}
    for row in versions.order_by("definition__workflow_id", "-version"):
        latest.setdefault(row.definition_id, row)
    return list(latest.values())


def workflow_list() -> list[WorkflowEntry]:
    """Code workflows, then active database workflows at their latest published version (a
    code id wins; one whose agent, team or function has gone is left out, logged)."""
    code = code_workflows()
    stored = [_available_workflow(version) for version in _workflow_versions() if version.definition.workflow_id not in code]
    return list(code.values()) + sorted((entry for entry in stored if entry is not None), key=lambda entry: entry.workflow_id)


def workflow_get(workflow_id: str, *, version: int | None = None) -> WorkflowEntry | None:
    """The workflow ``workflow_id``; ``version`` pins a published version of a database
    workflow (code workflows have none: a version asked of one is not found). A draft is not
    found, as for agents and teams."""
    code = code_workflows()
    if workflow_id in code:
        return code[workflow_id] if version is None else None
    found = _workflow_versions(workflow_id, version)
    return _available_workflow(found[0]) if found else None


def workflow_version_get(workflow_id: str, *, version: int) -> WorkflowEntry | None:
    """Stored version ``version`` of a database workflow, draft or published (admins, and a
    paused run continued on the version it paused in)."""
    if workflow_id in code_workflows():
        return None
    found = _workflow_versions(workflow_id, version, drafts=True)
    return _available_workflow(found[0]) if found else None


def entry_get(kind: str, component_id: str, *, version: int | None = None) -> AgentEntry | TeamEntry | WorkflowEntry | None:
    """The live component of ``kind`` ("agent", "team" or "workflow"), or a published version of it."""
    if kind == "workflow":
        return workflow_get(component_id, version=version)
    if kind == "team":
        return team_get(component_id, version=version)
    return agent_get(component_id, version=version)


def entry_version_get(kind: str, component_id: str, *, version: int) -> AgentEntry | TeamEntry | WorkflowEntry | None:
    """Any stored version, drafts included (admins only; code components have none)."""
    if kind == "workflow":
        return workflow_version_get(component_id, version=version)
    if kind == "team":
        return team_version_get(component_id, version=version)
    return agent_version_get(component_id, version=version)
