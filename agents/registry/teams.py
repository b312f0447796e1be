"""Teams stored in the database (``TeamDefinition`` and its versions), beside the code teams:
their members resolve to live agents and teams, and are built with the team for each run."""
from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from engine import Agent, Team
from engine.models import model_from_definition
from learnings.machines import learning_machine

from ..knowledge import named_knowledge
from ..post_hooks import named_post_hooks
from .agents import agent_get, agent_versions_published, named_guardrails
from .code import code_agents, code_teams
from .entries import AgentEntry, TeamEntry, template_of

logger = logging.getLogger("agents.registry")


class MemberUnavailable(Exception):
    """A database team names a member that is no longer live (deleted, deactivated, or no
    longer published), or contains itself: the team cannot be built, so it is not offered."""


# The database teams being built on this call path: a cycle stored past validation (a row
# edited outside the admin) stops here rather than recursing without end.
_BUILDING: ContextVar[tuple[str, ...]] = ContextVar("team_building", default=())


def team_from_version(version: Any, members: list[Agent | Team], user_id: str | None) -> Team:
    from ..toolkits import TOOLKITS

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
    from ..models import Stage, TeamVersion

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
    from ..models import Stage, TeamVersion

    if member_id in code_agents() or agent_versions_published(member_id):
        return "agent"
    if member_id in code_teams():
        return "team"
    published = TeamVersion.objects.filter(definition__is_active=True, definition__team_id=member_id, stage=Stage.PUBLISHED)
    return "team" if published.exists() else None


def live_member_ids() -> list[tuple[str, str]]:
    """``(id, kind)`` of every live agent and team, code first: what a team may have as members."""
    from ..models import Stage, TeamVersion

    agents = [*code_agents(), *(version.definition.agent_id for version in agent_versions_published())]
    teams = list(code_teams())
    stored = TeamVersion.objects.filter(definition__is_active=True, stage=Stage.PUBLISHED).values_list("definition__team_id", flat=True)
    teams += sorted(set(stored) - set(teams))
    return [(agent_id, "agent") for agent_id in dict.fromkeys(agents)] + [(team_id, "team") for team_id in teams]


def team_cycle(team_id: str, members: list[str]) -> list[str] | None:
    """The path by which ``team_id`` would contain itself with these members, or None.

    Sub-teams are walked at their live (latest published) version; code teams are leaves (their
    members are code objects, never database teams)."""
    from ..models import Stage, TeamVersion

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
