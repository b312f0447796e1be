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

The package's parts: ``entries`` (the entry types), ``code`` (what the modules define),
``agents``, ``teams`` and ``workflows`` (each kind's database components and lookups). This
module is what other apps import: those lookups, and one by kind.
"""
from __future__ import annotations

from .agents import agent_get, agent_list, agent_version_get
from .code import code_agents, code_functions, code_teams, code_workflows, function_list
from .entries import AgentEntry, TeamEntry, WorkflowEntry
from .teams import MemberUnavailable, live_member_ids, member_kind, team_cycle, team_get, team_list, team_version_get
from .workflows import workflow_get, workflow_list, workflow_steps_check, workflow_version_get

__all__ = [
    "AgentEntry", "MemberUnavailable", "TeamEntry", "WorkflowEntry", "agent_get", "agent_list", "agent_version_get", "code_agents",
    "code_functions", "code_teams", "code_workflows", "entry_get", "entry_version_get", "function_list", "live_member_ids",
    "member_kind", "team_cycle", "team_get", "team_list", "team_version_get", "workflow_get", "workflow_list",
    "workflow_steps_check", "workflow_version_get",
]


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
