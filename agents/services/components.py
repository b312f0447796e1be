"""The database-defined agents, teams and workflows as AgentOS's components (``/components``).

One definition is one component; its versions are the component's configs. The rules are the
admin's, unchanged: a config is the version's fields, validated by the version's own ``clean``;
there is one draft at a time, and publishing goes through ``publish_draft`` (which checks the
draft and opens the next one); the live version is the newest published one. So AgentOS's
operations map onto that model:

* ``current_version`` is the live version. Setting an older published version current publishes
  a copy of it (the rollback becomes the newest published version, with a new number), keeping
  the pending draft's edits in the next draft: the live version stays "the newest published".
* A new config writes the draft (there is only one); ``stage="published"`` publishes it.
* Deleting a component archives it (``is_active`` off: hidden, not runnable); restoring reverses it.

Definitions are platform configuration shared by every user (no owner): who may write them, and
who may read drafts, is decided by the caller (``agents.api.components``), never here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from ..models import AgentDefinition, AgentVersion, Stage, TeamDefinition, TeamVersion, WorkflowDefinition, WorkflowVersion
from .definitions import Definition, Version, draft_for, publish_draft

# What a config holds, per kind: the version's content fields (the admin's form, less the notes,
# which are the config's own ``notes``).
AGENT_CONFIG = (
    "model", "fallback_models", "reasoning_model", "instructions", "tools", "add_history_to_context",
    "num_history_runs", "update_memory_on_run", "add_memories_to_context", "enable_learning", "learning_name",
    "enable_session_summaries", "search_past_sessions", "num_past_sessions_to_search", "tool_call_limit", "markdown",
    "knowledge", "search_knowledge", "add_knowledge_to_context",
)
TEAM_CONFIG = (
    "mode", "members", "model", "role", "instructions", "tools", "max_iterations", "member_timeout", "add_history_to_context",
    "num_history_runs", "update_memory_on_run", "enable_learning", "learning_name", "enable_session_summaries", "markdown",
    "knowledge", "search_knowledge", "add_knowledge_to_context",
)
WORKFLOW_CONFIG = ("steps",)
# Keys an Agno config carries beside its fields: the id must be the component's own; a name and a
# description go onto the component when the config is published (AgentOS projects them then).
IDENTITY_KEYS = ("id", "name", "description")


@dataclass(frozen=True)
class Kind:
    name: str  # "agent"
    definition: type[Definition]
    version: type[Version]
    id_field: str  # "agent_id"
    config_fields: tuple[str, ...]


KINDS = {
    "agent": Kind("agent", AgentDefinition, AgentVersion, "agent_id", AGENT_CONFIG),
    "team": Kind("team", TeamDefinition, TeamVersion, "team_id", TEAM_CONFIG),
    "workflow": Kind("workflow", WorkflowDefinition, WorkflowVersion, "workflow_id", WORKFLOW_CONFIG),
}


class ComponentMissing(Exception):
    def __init__(self, component_id: str) -> None:
        super().__init__(f"Component {component_id} not found")


class ConfigMissing(Exception):
    def __init__(self, component_id: str, version: int | None = None) -> None:
        super().__init__(f"Config {component_id} v{version} not found" if version is not None else f"No current config for component {component_id}")


class ComponentConflict(Exception):
    """A state the request does not expect (AgentOS's 409): an id taken, a guard that does not
    match, a config that is not a draft, a component that is not archived."""


class ComponentInvalid(Exception):
    """What the admin's validation refuses, in its words (AgentOS's 400)."""

    def __init__(self, error: ValidationError | str) -> None:
        if isinstance(error, ValidationError):
            if hasattr(error, "error_dict"):
                text = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items())
            else:
                text = "; ".join(error.messages)
        else:
            text = error
        super().__init__(text)


@dataclass(frozen=True)
class Component:
    kind: Kind
    definition: Definition

    @property
    def component_id(self) -> str:
        return getattr(self.definition, self.kind.id_field)

    @property
    def versions(self):
        return self.definition.versions

    @property
    def current_version(self) -> int | None:
        """The live version's number, as read with the definition (``_definitions``)."""
        return self.definition.live_version

    def live(self) -> Version | None:
        return self.versions.filter(stage=Stage.PUBLISHED).order_by("-version").first()

    def latest_version(self) -> int:
        return self.versions.aggregate(top=Max("version"))["top"] or 0


@dataclass(frozen=True)
class Guard:
    """AgentOS's compare-and-set guard: each half given must match, else a conflict (0 as the
    expected current version: the component has none yet)."""

    latest_version: int | None = None
    current_version: int | None = None

    def check(self, component: Component) -> None:
        if self.latest_version is not None and component.latest_version() != self.latest_version:
            raise ComponentConflict(f"Component {component.component_id} latest version is {component.latest_version()}, expected {self.latest_version}")
        if self.current_version is not None:
            live = component.live()
            current = live.version if live is not None else 0
            if current != self.current_version:
                raise ComponentConflict(f"Component {component.component_id} current version is {current or None}, expected {self.current_version}")


NO_GUARD = Guard()


# --- reads ------------------------------------------------------------------------------------

def _definitions(kind: Kind):
    """The kind's definitions, each with its live version's number (``live_version``)."""
    return kind.definition.objects.annotate(live_version=Max("versions__version", filter=Q(versions__stage=Stage.PUBLISHED)))


def component_get(*, component_id: str, include_archived: bool = False, published_only: bool = False) -> Component:
    """The component ``component_id`` (the first kind that has it: ids are unique per kind, and
    ``component_create`` keeps them unique across kinds). ``published_only``: one never published
    is missing (what a caller who may not read drafts gets)."""
    for kind in KINDS.values():
        definition = _definitions(kind).filter(**{kind.id_field: component_id}).first()
        if definition is None:
            continue
        if (not include_archived and not definition.is_active) or (published_only and definition.live_version is None):
            break
        return Component(kind, definition)
    raise ComponentMissing(component_id)


def component_list(*, kind: str | None = None, include_archived: bool = False, published_only: bool = False) -> list[Component]:
    """Every component (of ``kind``), newest first (then by id). Definitions are few (an operator's), so the
    three kinds are read whole and merged: one query per kind."""
    found: list[Component] = []
    for each in KINDS.values():
        if kind is not None and each.name != kind:
            continue
        definitions = _definitions(each)
        if not include_archived:
            definitions = definitions.filter(is_active=True)
        if published_only:
            definitions = definitions.filter(live_version__isnull=False)
        found += [Component(each, definition) for definition in definitions]
    # AgentOS's order: newest first, then by id.
    by_id = sorted(found, key=lambda component: component.component_id)
    return sorted(by_id, key=lambda component: component.definition.created_at, reverse=True)


def config_list(*, component: Component, published_only: bool) -> list[Version]:
    versions = component.versions.order_by("-version")
    return list(versions.filter(stage=Stage.PUBLISHED) if published_only else versions)


def config_get(*, component: Component, version: int, published_only: bool) -> Version:
    found = component.versions.filter(version=version).first()
    if found is None or (published_only and found.stage != Stage.PUBLISHED):
        raise ConfigMissing(component.component_id, version)
    return found


def config_current(*, component: Component) -> Version:
    live = component.live()
    if live is None:
        raise ConfigMissing(component.component_id)
    return live


def config_of(component: Component, version: Version) -> dict[str, Any]:
    """A version's config as the API shows it: its content fields."""
    return {field: getattr(version, field) for field in component.kind.config_fields}


# --- writes -----------------------------------------------------------------------------------

def _fields_from_config(kind: Kind, component_id: str, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The version fields a config sets, and the identity (name, description) it carries."""
    unknown = sorted(set(config) - set(kind.config_fields) - set(IDENTITY_KEYS))
    if unknown:
        raise ComponentInvalid(f"Unknown {kind.name} config field(s): {', '.join(unknown)}. Known: {', '.join(kind.config_fields)}.")
    if "id" in config and config["id"] != component_id:
        raise ComponentInvalid(f"config.id {config['id']!r} is not the component's id {component_id!r}")
    identity = {key: config[key] for key in ("name", "description") if isinstance(config.get(key), str)}
    fields = {field: _agno_spelling(field, config[field]) for field in kind.config_fields if field in config}
    return fields, identity


def _agno_spelling(field: str, value: Any) -> Any:
    """Agno's own spellings of two fields, read as ours: a model as ``{"provider", "id"}``, a
    team's members as ``{"type": "agent", "agent_id": ...}`` objects."""
    if field in ("model", "reasoning_model") and isinstance(value, dict) and value.get("provider") and value.get("id"):
        return f"{value['provider']}:{value['id']}"
    if field == "members" and isinstance(value, list):
        return [member.get("agent_id") or member.get("team_id") if isinstance(member, dict) else member for member in value]
    return value


def _save_draft(draft: Version, fields: dict[str, Any], *, notes: str | None) -> Version:
    for field, value in fields.items():
        setattr(draft, field, value)
    if notes is not None:
        draft.notes = notes
    try:
        draft.full_clean()
    except ValidationError as exc:
        raise ComponentInvalid(exc) from None
    draft.save()
    return draft


def _publish(component: Component, identity: dict[str, str]) -> Version:
    """The draft made live, through the admin's ``publish_draft`` (which checks it first)."""
    try:
        published = publish_draft(component.definition)
    except ValidationError as exc:
        raise ComponentInvalid(exc) from None
    if identity:
        for key, value in identity.items():
            setattr(component.definition, key, value)
        try:
            component.definition.full_clean()
        except ValidationError as exc:
            raise ComponentInvalid(exc) from None
        component.definition.save(update_fields=[*identity])
    assert published is not None  # the caller wrote the draft in this transaction
    return published


def _lock(component: Component) -> None:
    """Writes to one definition take turns (PostgreSQL; SQLite's write transactions already do):
    two drafts written at once must not both open version N."""
    list(type(component.definition).objects.select_for_update().filter(pk=component.definition.pk).values_list("pk", flat=True))


def _touch(component: Component) -> None:
    component.definition.updated_at = timezone.now()
    component.definition.save(update_fields=["updated_at"])


def component_id_taken(component_id: str) -> bool:
    """Is ``component_id`` any component's, stored or defined in code (one id, one component)?"""
    from ..registry import code_agents, code_teams, code_workflows

    if component_id in code_agents() or component_id in code_teams() or component_id in code_workflows():
        return True
    return any(kind.definition.objects.filter(**{kind.id_field: component_id}).exists() for kind in KINDS.values())


def component_create(
    *, kind: str, component_id: str, name: str, description: str, config: dict[str, Any], stage: str, notes: str | None,
) -> Component:
    """A new definition with its first version, published when ``stage`` says so."""
    each = KINDS[kind]
    fields, identity = _fields_from_config(each, component_id, config)
    with transaction.atomic():
        if component_id_taken(component_id):
            raise ComponentConflict(f"Component {component_id} already exists")
        definition = each.definition(**{each.id_field: component_id}, name=identity.get("name", name), description=identity.get("description", description))
        try:
            definition.full_clean()
        except ValidationError as exc:
            raise ComponentInvalid(exc) from None
        try:
            with transaction.atomic():
                definition.save()
        except IntegrityError:  # created by another request since the check above
            raise ComponentConflict(f"Component {component_id} already exists") from None
        component = Component(each, definition)
        _save_draft(each.version(definition=definition, version=1), fields, notes=notes)
        if stage == Stage.PUBLISHED:
            _publish(component, {})
    return component_get(component_id=component_id)


def component_update(*, component: Component, name: str | None, description: str | None, guard: Guard = NO_GUARD) -> None:
    with transaction.atomic():
        _lock(component)
        guard.check(component)
        definition = component.definition
        if name is not None:
            definition.name = name
        if description is not None:
            definition.description = description
        definition.updated_at = timezone.now()
        try:
            definition.full_clean()
        except ValidationError as exc:
            raise ComponentInvalid(exc) from None
        definition.save(update_fields=["name", "description", "updated_at"])


def component_archive(*, component: Component, guard: Guard = NO_GUARD) -> None:
    with transaction.atomic():
        _lock(component)
        guard.check(component)
        component.definition.is_active = False
        component.definition.updated_at = timezone.now()
        component.definition.save(update_fields=["is_active", "updated_at"])


def component_restore(*, component: Component) -> None:
    with transaction.atomic():
        _lock(component)
        component.definition.refresh_from_db(fields=["is_active"])
        if component.definition.is_active:
            raise ComponentConflict("Component is not archived")
        component.definition.is_active = True
        component.definition.updated_at = timezone.now()
        component.definition.save(update_fields=["is_active", "updated_at"])


def config_create(
    *, component: Component, config: dict[str, Any], stage: str, notes: str | None, guard: Guard = NO_GUARD,
) -> Version:
    """A new config: the draft, written with ``config`` (there is one draft at a time, so this is
    the draft's next content), published when ``stage`` says so."""
    fields, identity = _fields_from_config(component.kind, component.component_id, config)
    with transaction.atomic():
        _lock(component)
        guard.check(component)
        draft = _save_draft(draft_for(component.definition), fields, notes=notes)
        _touch(component)
        return _publish(component, identity) if stage == Stage.PUBLISHED else draft


def config_update(
    *, component: Component, version: int, config: dict[str, Any] | None, stage: str | None, notes: str | None, guard: Guard = NO_GUARD,
) -> Version:
    """Draft ``version`` edited (a published version never changes), and published if asked."""
    fields, identity = _fields_from_config(component.kind, component.component_id, config or {})
    with transaction.atomic():
        _lock(component)
        guard.check(component)
        draft = config_get(component=component, version=version, published_only=False)
        if draft.stage != Stage.DRAFT:
            raise ComponentConflict(f"Cannot update published config {component.component_id} v{version}")
        _save_draft(draft, fields, notes=notes)
        _touch(component)
        return _publish(component, identity) if stage == Stage.PUBLISHED else draft


def config_delete(*, component: Component, version: int) -> None:
    """The draft ``version`` discarded (its unpublished edits); published versions stay."""
    with transaction.atomic():
        _lock(component)
        found = config_get(component=component, version=version, published_only=False)
        if found.stage != Stage.DRAFT:
            raise ComponentConflict(f"Cannot delete published config {component.component_id} v{version}; only drafts are deletable")
        if component.versions.count() == 1:
            raise ComponentConflict(f"Cannot delete the last visible config of {component.component_id}")
        found.delete()
        _touch(component)


def config_set_current(*, component: Component, version: int, guard: Guard = NO_GUARD) -> Version:
    """Published ``version`` made live again (a rollback): see the module's docstring."""
    with transaction.atomic():
        _lock(component)
        guard.check(component)
        target = config_get(component=component, version=version, published_only=False)
        if target.stage != Stage.PUBLISHED:
            raise ComponentConflict(f"Config {component.component_id} v{version} is a draft: publish it to make it current")
        live = component.live()
        if live is not None and live.version == version:
            return live
        draft = draft_for(component.definition)
        pending = config_of(component, draft), draft.notes
        _save_draft(draft, config_of(component, target), notes=f"v{version} made current again")
        published = _publish(component, {})
        _save_draft(draft_for(component.definition), pending[0], notes=pending[1])
        return published
