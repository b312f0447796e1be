"""The registry's entries: one per agent, team or workflow, each the component protocol
(core.components) for what it builds."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import Agent, Team, Workflow
from engine.factory import ComponentFactory, FactoryContext


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


def factory_build(factory: ComponentFactory) -> Callable[[str | None], Any]:
    """A factory entry's ``build(user_id)``, for callers that know only the user (a team's
    member, an eval): the factory gets a context with the user alone."""
    return lambda user_id: factory.build(FactoryContext(user_id=user_id))


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
