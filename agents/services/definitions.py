"""Database-defined agents, teams and workflows: create, draft, publish (one flow for every kind)."""
from __future__ import annotations

from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..models import AgentDefinition, AgentVersion, Stage, TeamDefinition, TeamVersion, WorkflowDefinition, WorkflowVersion

Definition = AgentDefinition | TeamDefinition | WorkflowDefinition
Version = AgentVersion | TeamVersion | WorkflowVersion
D = TypeVar("D", AgentDefinition, TeamDefinition, WorkflowDefinition)


def next_version(definition: Definition) -> int:
    return (definition.versions.aggregate(top=Max("version"))["top"] or 0) + 1


def draft_for(definition: Definition) -> Version:
    """The definition's editable draft; a new one copies the latest version."""
    draft = definition.versions.filter(stage=Stage.DRAFT).order_by("-version").first()
    if draft is not None:
        return draft
    latest = definition.versions.order_by("-version").first()
    version = next_version(definition)
    if latest is None:
        return definition.versions.create(version=version)
    latest.pk = None
    latest.version = version
    latest.stage = Stage.DRAFT
    latest.published_at = None
    latest.created_at = timezone.now()
    latest.save(force_insert=True)
    return latest


def publish_draft(definition: Definition) -> Version | None:
    """Make the draft live and open the next draft. None when there is no draft."""
    with transaction.atomic():
        draft = definition.versions.select_for_update().filter(stage=Stage.DRAFT).order_by("-version").first()
        if draft is None:
            return None
        draft.full_clean()
        draft.stage = Stage.PUBLISHED
        draft.published_at = timezone.now()
        draft.save(update_fields=["stage", "published_at"])
        definition.updated_at = timezone.now()
        definition.save(update_fields=["updated_at"])
        draft_for(definition)
    return draft


def definition_create(*, agent_id: str, name: str, description: str = "", publish: bool = True, **version_fields: Any) -> AgentDefinition:
    """A new database agent with a first version (published unless ``publish=False``)."""
    return _create(
        AgentDefinition(agent_id=agent_id, name=name, description=description),
        version_model=AgentVersion, publish=publish, version_fields=version_fields,
    )


def team_definition_create(*, team_id: str, name: str, members: list[str], description: str = "", publish: bool = True, **version_fields: Any) -> TeamDefinition:
    """A new database team with a first version (published unless ``publish=False``)."""
    return _create(
        TeamDefinition(team_id=team_id, name=name, description=description),
        version_model=TeamVersion, publish=publish, version_fields={**version_fields, "members": members},
    )


def workflow_definition_create(*, workflow_id: str, name: str, steps: list[Any], description: str = "", publish: bool = True, **version_fields: Any) -> WorkflowDefinition:
    """A new database workflow with a first version (published unless ``publish=False``)."""
    return _create(
        WorkflowDefinition(workflow_id=workflow_id, name=name, description=description),
        version_model=WorkflowVersion, publish=publish, version_fields={**version_fields, "steps": steps},
    )


def _create(definition: D, *, version_model: type[Version], publish: bool, version_fields: dict[str, Any]) -> D:
    """Store a new definition and its first version, both validated, in one transaction."""
    with transaction.atomic():
        definition.full_clean()
        definition.save()
        version = version_model(definition=definition, version=1, **version_fields)
        version.full_clean()
        version.save()
        if publish:
            publish_draft(definition)
    return definition
