"""The learning machines a component may name by ``learning_name`` (the registry's ``learning``
entries); ``enable_learning=True`` builds the default one."""
from __future__ import annotations

from engine.learning import DEFAULT_MACHINE, LearningMachine

LEARNING_MACHINES: dict[str, tuple[LearningMachine, str]] = {
    "default": (DEFAULT_MACHINE, "The user's memories and profile (what enable_learning builds)"),
    "entities": (
        LearningMachine(name="entities", entity_namespace="user"),
        'The user\'s memories and profile, and the entities they mention (entity memory under namespace="user", '
        "through the agent's remember_about, search_entities and forget tools)",
    ),
    "full": (
        LearningMachine(name="full", entity_namespace="user", decision_log=True),
        "As entities, and a decision log of the agent's choices for the user (its log_decision, record_outcome "
        "and search_decisions tools)",
    ),
    "memories": (LearningMachine(name="memories", user_profile=False), "The user's memories only"),
}


def learning_machine(*, learning_name: str, enable_learning: bool) -> LearningMachine | None:
    """The machine a stored definition configures (None: learning off)."""
    if learning_name:
        return LEARNING_MACHINES[learning_name][0]
    return DEFAULT_MACHINE if enable_learning else None
