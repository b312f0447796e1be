"""Components defined in code: ``AGENTS``, ``TEAMS``, ``WORKFLOWS`` and ``FUNCTIONS`` of the
``AGENT_MODULES`` modules, loaded once per list of modules."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.conf import settings

from engine import Agent, Team, Workflow
from engine.factory import AgentFactory, ComponentFactory, TeamFactory, WorkflowFactory

from .entries import AgentEntry, TeamEntry, WorkflowEntry, factory_build


def _code_entry_fields(component: Agent | Team | Workflow | ComponentFactory) -> dict[str, Any]:
    """What a code agent's, team's or workflow's registry entry holds besides its id: a factory
    is built per request (no template); a component is the one instance every run is given."""
    if isinstance(component, ComponentFactory):
        return {
            "name": component.name, "description": component.description, "source": "code",
            "build": factory_build(component), "factory": component,
        }
    return {
        "name": component.name or component.id, "description": component.description, "source": "code",
        "build": lambda user_id: component, "template": component,
    }


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
            entries[agent.id] = AgentEntry(agent_id=agent.id, **_code_entry_fields(agent))
    return entries


@lru_cache(maxsize=8)
def code_agents_in(modules: tuple[str, ...]) -> dict[str, AgentEntry]:
    return _load_code_agents(modules)


def code_agents() -> dict[str, AgentEntry]:
    return code_agents_in(tuple(settings.AGENT_MODULES))


def _load_code_teams(modules: tuple[str, ...]) -> dict[str, TeamEntry]:
    entries: dict[str, TeamEntry] = {}
    agents = code_agents_in(modules)
    for module_name in modules:
        module = importlib.import_module(module_name)
        teams = getattr(module, "TEAMS", [])
        if not isinstance(teams, (list, tuple)) or not all(isinstance(team, (Team, TeamFactory)) for team in teams):
            raise TypeError(f"{module_name}.TEAMS must be a list of engine.Team (or TeamFactory)")
        for team in teams:
            if team.id in entries or team.id in agents:
                raise ValueError(f"the team id {team.id!r} is taken by another code agent or team")
            entries[team.id] = TeamEntry(team_id=team.id, **_code_entry_fields(team))
    return entries


@lru_cache(maxsize=8)
def code_teams_in(modules: tuple[str, ...]) -> dict[str, TeamEntry]:
    return _load_code_teams(modules)


def code_teams() -> dict[str, TeamEntry]:
    return code_teams_in(tuple(settings.AGENT_MODULES))


def _load_code_workflows(modules: tuple[str, ...]) -> dict[str, WorkflowEntry]:
    entries: dict[str, WorkflowEntry] = {}
    taken = set(code_agents_in(modules)) | set(code_teams_in(modules))
    for module_name in modules:
        module = importlib.import_module(module_name)
        workflows = getattr(module, "WORKFLOWS", [])
        if not isinstance(workflows, (list, tuple)) or not all(isinstance(workflow, (Workflow, WorkflowFactory)) for workflow in workflows):
            raise TypeError(f"{module_name}.WORKFLOWS must be a list of engine.Workflow (or WorkflowFactory)")
        for workflow in workflows:
            if workflow.id in entries or workflow.id in taken:
                raise ValueError(f"the workflow id {workflow.id!r} is taken by another code agent, team or workflow")
            entries[workflow.id] = WorkflowEntry(workflow_id=workflow.id, **_code_entry_fields(workflow))
    return entries


@lru_cache(maxsize=8)
def code_workflows_in(modules: tuple[str, ...]) -> dict[str, WorkflowEntry]:
    return _load_code_workflows(modules)


def code_workflows() -> dict[str, WorkflowEntry]:
    return code_workflows_in(tuple(settings.AGENT_MODULES))


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
def code_functions_in(modules: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    return _load_code_functions(modules)


def code_functions() -> dict[str, Callable[..., Any]]:
    """The registered functions, by id (their ``__name__``), in the order the modules list them."""
    return code_functions_in(tuple(settings.AGENT_MODULES))


def function_list() -> list[tuple[str, str]]:
    """``(id, the first line of its docstring)`` of every registered function."""
    return [(name, (fn.__doc__ or "").strip().splitlines()[0] if (fn.__doc__ or "").strip() else "") for name, fn in code_functions().items()]


def code_components_forget() -> None:
    """Load the ``AGENT_MODULES`` modules' components again on next use (a test that reloaded one)."""
    for loaded in (code_agents_in, code_teams_in, code_workflows_in, code_functions_in):
        loaded.cache_clear()
