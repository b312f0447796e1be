"""Quick prompts: what the chat offers on an empty conversation with a component.

AgentOS keeps them in its configuration (``AgentOSConfig(chat=ChatConfig(quick_prompts={id:
[...]}))``) and serves them in ``/config`` as ``chat.quick_prompts``. Here a code module in
``AGENT_MODULES`` declares ``QUICK_PROMPTS = {component_id: [prompt, ...]}`` beside its
components, and an operator adds more in the admin (``QuickPrompt`` rows, after the code's).
``/config`` lists them for the components the caller may see that are live now.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any

from django.conf import settings

from core.components import component_list

_FAMILIES = {"agent": "agents", "team": "teams", "workflow": "workflows"}


def _load_code_quick_prompts(modules: tuple[str, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for module_name in modules:
        declared = getattr(importlib.import_module(module_name), "QUICK_PROMPTS", {})
        if not isinstance(declared, dict) or not all(
            isinstance(key, str) and isinstance(prompts, (list, tuple)) and all(isinstance(p, str) and p.strip() for p in prompts)
            for key, prompts in declared.items()
        ):
            raise TypeError(f"{module_name}.QUICK_PROMPTS must map component ids to lists of prompts (non-empty strings)")
        for component_id, prompts in declared.items():
            found.setdefault(component_id, []).extend(p for p in prompts if p not in found.get(component_id, []))
    return found


@lru_cache(maxsize=8)
def _code_quick_prompts_for(modules: tuple[str, ...]) -> dict[str, list[str]]:
    return _load_code_quick_prompts(modules)


def code_quick_prompts() -> dict[str, list[str]]:
    return _code_quick_prompts_for(tuple(settings.AGENT_MODULES))


def quick_prompts_for(principal: Any) -> dict[str, list[str]] | None:
    """``{component_id: [prompt, ...]}`` for the live components ``principal`` may see, code
    prompts first, then the admin's in their order; None when there are none."""
    from .models import QuickPrompt

    merged: dict[tuple[str, str], list[str]] = {}
    for component_id, prompts in code_quick_prompts().items():
        for kind in _FAMILIES:
            merged[(kind, component_id)] = list(prompts)
    for row in QuickPrompt.objects.all():
        prompts = merged.setdefault((row.component_type, row.component_id), [])
        if row.prompt not in prompts:
            prompts.append(row.prompt)
    found: dict[str, list[str]] = {}
    for kind, family in _FAMILIES.items():
        visible = principal.visible_ids(family)
        for entry in component_list(kind):
            prompts = merged.get((kind, entry.component_id))
            if prompts and (visible is None or entry.component_id in visible) and entry.component_id not in found:
                found[entry.component_id] = prompts
    return found or None


def component_known(kind: str, component_id: str) -> bool:
    """Whether an agent, team or workflow of that id exists in code or in the admin (any stage:
    prompts may be written before a definition is published)."""
    from . import registry
    from .models import AgentDefinition, TeamDefinition, WorkflowDefinition

    if kind == "agent":
        return component_id in registry.code_agents() or AgentDefinition.objects.filter(agent_id=component_id).exists()
    if kind == "team":
        return component_id in registry.code_teams() or TeamDefinition.objects.filter(team_id=component_id).exists()
    return component_id in registry.code_workflows() or WorkflowDefinition.objects.filter(workflow_id=component_id).exists()
