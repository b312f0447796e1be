"""Workflows stored in the database (``WorkflowDefinition`` and its versions), beside the code
workflows: step graphs that name live agents, teams and registered functions."""
from __future__ import annotations

import logging
from typing import Any

from engine import Agent, Team, Workflow
from engine.factory import FactoryContext
from engine.workflow_config import Executors, StepConfigError, steps_from_config

from .agents import agent_get
from .code import code_functions, code_workflows
from .entries import AgentEntry, TeamEntry, WorkflowEntry, template_of
from .teams import team_get

logger = logging.getLogger("agents.registry")


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
    from ..models import Stage, WorkflowVersion

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
