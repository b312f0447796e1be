"""Entity memory and decision logs: the learning stores an agent writes through its own tools.

Agno v3 runs these two stores in AGENTIC mode only (``EntityMemoryConfig``, ``DecisionLogConfig``):
there is no extraction pass; the agent is offered tools and decides what to record. So here: a
machine with ``entity_namespace`` set offers ``remember_about``, ``search_entities`` and
``forget``; one with ``decision_log`` offers ``log_decision``, ``record_outcome`` and
``search_decisions``. Their records have Agno's shapes (``agno.learn.schemas.EntityMemory`` and
``DecisionLog``) and ids (``entity_<namespace>_<type>_<id>``, with a digest of the user under
``namespace="user"``; ``dec_<hex>``), so /learnings and an Agno reader address the same rows.

A tool writes when it is called, as Agno's do: the tool's answer in the run's events is then true
of the table. The engine keeps no storage: the caller hands the run a ``LearningRecords`` scoped to
the run's user, which reads and changes rows atomically (a read-modify-write under a row lock, so
two runs adding facts to one entity both keep theirs) and refuses a row it may not write.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Protocol

from engine.ids import new_uuid
from engine.learning import DECISION_LOG, ENTITY_MEMORY, USER_NAMESPACE, LearningMachine, learning_id_for
from engine.tools.function import Function

UNKNOWN_TYPE = "unknown"
MAX_DIRECTORY = 50
MAX_DECISIONS_IN_CONTEXT = 5
_IRREGULAR_TYPES = {"people": "person", "persons": "person", "companies": "company"}
# Symbols that name a thing rather than separate words ("C++" is not "C"), as Agno's slugs keep them.
_IDENTITY_SYMBOLS = {"++": "plus_plus", "+": "plus", "#": "sharp"}

Change = Callable[[dict[str, Any] | None], dict[str, Any] | None]


class LearningRefused(Exception):
    """The row's id is held by a record the run's user may not write (another user's)."""


class LearningRecords(Protocol):
    """The run user's learning rows, as the app keeps them (learnings.services)."""

    user_id: str
    # Read when the run was prepared: the system prompt's entity directory and recent decisions.
    entity_directory: list[dict[str, Any]]
    recent_decisions: list[dict[str, Any]]

    def rows(
        self, *, learning_type: str, namespace: str | None = None, entity_id: str | None = None, limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Records of a type the user may read (``namespace="user"``: only their own), newest first;
        with ``entity_id``, only that entity's (of any type)."""
        ...

    def change(self, *, learning_id: str, identity: dict[str, Any], change: Change) -> dict[str, Any] | None:
        """Apply ``change`` to the row's content (None: no row yet) under a lock and store what it
        returns (None: nothing to store); returns the stored content. ``identity`` holds the row's
        columns (learning_type, namespace, user_id as owner, entity ids, agent/team/session ids).
        Raises ``LearningRefused`` when the id is held by a row this user may not write."""
        ...


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def slugify(name: str) -> str:
    """A stable entity id from a display name (Agno's ``_slugify``): accents folded, lower case,
    words joined by underscores, so "Acme, Inc." and "Acme Inc" are one entity."""
    decomposed = unicodedata.normalize("NFKD", name.strip().lower())
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    for symbol, word in _IDENTITY_SYMBOLS.items():
        folded = folded.replace(symbol, f"_{word}_")
    return re.sub(r"[^\w]+", "_", folded, flags=re.UNICODE).strip("_")


def entity_type_of(value: str | None) -> str:
    text = re.sub(r"\s+", "_", str(value or "").strip().lower())
    text = _IRREGULAR_TYPES.get(text, text)
    return text or UNKNOWN_TYPE


def _norm(text: Any) -> str:
    return " ".join(str(text or "").split()).casefold()


def live_facts(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in content.get("facts") or [] if isinstance(f, dict) and not f.get("superseded_at")]


def entity_remember(
    content: dict[str, Any] | None, *, name: str, entity_id: str, entity_type: str, namespace: str,
    user_id: str, agent_id: str | None, team_id: str | None,
    description: str | None, facts: list[str], events: list[str],
) -> tuple[dict[str, Any], bool, int]:
    """The entity's content with the facts and events recorded (Agno's ``remember_about``): a new
    entity, or the stored one merged into. Returns (content, created, facts already there)."""
    stamp = now_iso()
    created = content is None
    entity = dict(content) if content else {
        "entity_id": entity_id, "entity_type": entity_type, "name": name.strip(), "description": None, "properties": {},
        "aliases": [], "facts": [], "events": [], "relationships": [], "namespace": namespace,
        "user_id": user_id if namespace == USER_NAMESPACE else None, "agent_id": agent_id, "team_id": team_id,
        "created_at": stamp, "updated_at": stamp, "archived_at": None,
    }
    entity["facts"] = [dict(f) for f in entity.get("facts") or [] if isinstance(f, dict)]
    entity["events"] = [dict(e) for e in entity.get("events") or [] if isinstance(e, dict)]
    if description and description.strip():
        entity["description"] = description.strip()
    known = {_norm(f.get("content")) for f in live_facts(entity)}
    duplicates = 0
    for fact in facts:
        if not str(fact).strip():
            continue
        if _norm(fact) in known:
            duplicates += 1
            continue
        known.add(_norm(fact))
        entity["facts"].append({"id": new_uuid().hex[:8], "content": str(fact).strip(), "created_at": stamp, "updated_at": stamp})
    seen_events = {_norm(e.get("content")) for e in entity["events"]}
    for event in events:
        if str(event).strip() and _norm(event) not in seen_events:
            seen_events.add(_norm(event))
            entity["events"].append({"id": new_uuid().hex[:8], "content": str(event).strip(), "created_at": stamp})
    entity["archived_at"] = None  # a later remember_about revives an archived entity
    entity["updated_at"] = stamp
    return entity, created, duplicates


def entity_forget(content: dict[str, Any], fact: str | None) -> tuple[dict[str, Any] | None, str]:
    """Retire the matching live fact, or archive the entity without one (Agno's ``forget``):
    nothing is deleted. Returns (the new content or None when nothing changed, the answer)."""
    entity = {**content, "facts": [dict(f) for f in content.get("facts") or [] if isinstance(f, dict)]}
    label = f"{entity.get('entity_type')}/{entity.get('entity_id')}"
    stamp = now_iso()
    if not (fact and fact.strip()):
        if entity.get("archived_at"):
            return None, f"{label} is already archived."
        entity.update(archived_at=stamp, updated_at=stamp)
        return entity, f"Archived {label}. It will no longer be recalled; any new remember_about about it revives it."
    needle = _norm(fact)
    live = live_facts(entity)
    matches = [f for f in live if _norm(f.get("content")) == needle] or [
        f for f in live if needle in _norm(f.get("content")) or _norm(f.get("content")) in needle
    ]
    if len(matches) != 1:
        listing = "; ".join(str(f.get("content")) for f in (matches or live)[:10]) or "none"
        return None, f"No single fact on {label} matches {fact!r}; nothing was retired. Its facts: {listing}"
    matches[0].update(superseded_at=stamp, superseded_by="forgotten")
    entity["updated_at"] = stamp
    return entity, f"Retired fact on {label}: {matches[0].get('content')}"


def entity_summary(content: dict[str, Any]) -> str:
    label = f"{content.get('name') or content.get('entity_id')} ({content.get('entity_type')})"
    facts = [str(f.get("content")) for f in live_facts(content)]
    parts = [label + (f": {content['description']}" if content.get("description") else "")]
    if facts:
        parts.append("facts: " + "; ".join(facts[:10]))
    events = [str(e.get("content")) for e in content.get("events") or [] if isinstance(e, dict)]
    if events:
        parts.append("events: " + "; ".join(events[-5:]))
    return " | ".join(parts)


def learning_context(machine: LearningMachine, records: LearningRecords) -> list[str]:
    """What the system prompt says of these stores (Agno's ``build_context`` and ``instructions``):
    the entity directory and the recent decisions read when the run was prepared."""
    parts = []
    if machine.entity_namespace is not None:
        entities = [e for e in records.entity_directory if not e.get("archived_at")][:MAX_DIRECTORY]
        listing = "\n".join(f"- {entity_summary(e)}" for e in entities) or "No entities recorded yet."
        parts.append(
            f"<entity_memory>\n{listing}\n</entity_memory>\n<entity_memory_instructions>\n"
            "You have entity memory about the people, companies, projects, systems and products the user mentions.\n"
            "- `remember_about`: record facts, events or a description on an entity, by name.\n"
            "- `search_entities`: find stored entities; with no query, list them.\n"
            "- `forget`: retire a fact, or archive a whole entity.\n</entity_memory_instructions>"
        )
    if machine.decision_log:
        lines = []
        for decision in records.recent_decisions[:MAX_DECISIONS_IN_CONTEXT]:
            lines.append(f"- [{decision.get('id')}] {decision.get('decision')}"
                         + (f" (reasoning: {decision['reasoning']})" if decision.get("reasoning") else "")
                         + (f" -> {decision['outcome']}" if decision.get("outcome") else ""))
        parts.append(
            "<decision_log>\n" + ("Recent decisions:\n" + "\n".join(lines) if lines else "No recent decisions logged.")
            + "\n</decision_log>\n<decision_log_instructions>\nUse `log_decision` to record significant decisions with reasoning.\n"
            "Use `search_decisions` to find past decisions.\nUse `record_outcome` to update a decision with its outcome.\n"
            "</decision_log_instructions>"
        )
    return parts


def run_records(machine: LearningMachine | None, store: Any) -> LearningRecords | None:
    """The run's learning records when the machine has an agentic store (entity memory, decision
    log) and the caller handed the run a store that keeps them; else None (no tools, no context)."""
    if machine is None or not machine.agentic or store is None or not callable(getattr(store, "change", None)):
        return None
    return store


def learning_tools(
    machine: LearningMachine, records: LearningRecords, *, agent_id: str | None, team_id: str | None, session_id: str | None,
) -> list[Function]:
    """The tools the machine's agentic stores offer the agent for this run."""
    tools: list[Function] = []
    if machine.entity_namespace is not None:
        tools += entity_tools(machine.entity_namespace, records, agent_id=agent_id, team_id=team_id)
    if machine.decision_log:
        tools += decision_tools(records, agent_id=agent_id, team_id=team_id, session_id=session_id)
    return tools


def entity_tools(namespace: str, records: LearningRecords, *, agent_id: str | None, team_id: str | None) -> list[Function]:
    user_id = records.user_id

    def key(entity_id: str, entity_type: str) -> str:
        found = learning_id_for(ENTITY_MEMORY, user_id=user_id, entity_id=entity_id, entity_type=entity_type, namespace=namespace)
        assert found is not None  # both identity fields are set, and a run with learning has a user
        return found

    def identity(entity_id: str, entity_type: str) -> dict[str, Any]:
        return {
            "learning_type": ENTITY_MEMORY, "namespace": namespace, "entity_id": entity_id, "entity_type": entity_type,
            "user_id": user_id if namespace == USER_NAMESPACE else None, "agent_id": agent_id, "team_id": team_id,
        }

    def stored(name: str, entity_type: str | None = None) -> list[dict[str, Any]]:
        """The entities of the namespace this name (and type) resolves to."""
        return [
            row for row in records.rows(learning_type=ENTITY_MEMORY, namespace=namespace, entity_id=slugify(name))
            if entity_type is None or row.get("entity_type") == entity_type
        ]

    def remember_about(entity: str, entity_type: str, description: str | None = None, facts: list[str] | None = None, events: list[str] | None = None) -> str:
        """Record something about an entity - a person, project, company, system, or product.

        Upserts: the entity is created if new, merged into if already known. Refer to the entity
        by name ("Sarah Chen", "radar") - never invent an id.

        Args:
            entity: The entity's name as people say it (e.g. "Sarah Chen", "Acme").
            entity_type: Category: person, project, company, system, product - or another short noun.
            description: One-line description of what this entity is.
            facts: One-line facts to record on the entity.
            events: Dated occurrences to record.
        """
        entity_id, kind = slugify(entity), entity_type_of(entity_type)
        # A model may send one fact as a string rather than a list of one.
        facts = [facts] if isinstance(facts, str) else facts
        events = [events] if isinstance(events, str) else events
        if not entity_id:
            return "Entity name is required; nothing was recorded."
        outcome: dict[str, Any] = {}

        def change(content: dict[str, Any] | None) -> dict[str, Any]:
            merged, created, duplicates = entity_remember(
                content, name=entity, entity_id=entity_id, entity_type=kind, namespace=namespace, user_id=user_id,
                agent_id=agent_id, team_id=team_id, description=description, facts=list(facts or []), events=list(events or []),
            )
            outcome.update(created=created, duplicates=duplicates)
            return merged

        try:
            records.change(learning_id=key(entity_id, kind), identity=identity(entity_id, kind), change=change)
        except LearningRefused as refused:
            return f"Nothing was recorded on {kind}/{entity_id}: {refused}"
        added = len([f for f in facts or [] if str(f).strip()]) - outcome["duplicates"]
        parts = [f"{added} fact(s)"] if added else []
        if events:
            parts.append(f"{len([e for e in events if str(e).strip()])} event(s)")
        recorded = f" Recorded {', '.join(parts)}." if parts else ""
        skipped = f" Skipped {outcome['duplicates']} already-recorded fact(s)." if outcome["duplicates"] else ""
        return f"{'Created' if outcome['created'] else 'Updated'} {kind}/{entity_id}.{recorded}{skipped}"

    def search_entities(query: str | None = None, entity_type: str | None = None) -> str:
        """Search stored entities, or list them.

        With a query, matches entity names, facts and events. Without a query, lists entities by recency.

        Args:
            query: Text to match (a name, a fact fragment). Omit to list entities by recency.
            entity_type: Optional filter: person, project, company, system, product, etc.
        """
        kind = entity_type_of(entity_type) if entity_type and entity_type.strip() else None
        needle = _norm(query) if query and query.strip() else ""
        hits = []
        for row in records.rows(learning_type=ENTITY_MEMORY, namespace=namespace):
            content = row.get("content") if isinstance(row.get("content"), dict) else {}
            if kind and row.get("entity_type") != kind:
                continue
            if needle and needle not in _norm(entity_summary(content)) and needle not in _norm(row.get("entity_id")):
                continue
            hits.append(entity_summary(content) + (" [archived]" if content.get("archived_at") else ""))
        return "\n".join(f"- {hit}" for hit in hits[:20]) if hits else "No matching entities found."

    def forget(entity: str, fact: str | None = None) -> str:
        """Retire a fact from an entity, or archive the whole entity (nothing is deleted).

        Args:
            entity: The entity's name.
            fact: The fact to retire, worded as closely as you can to how it was stored. Omit it to archive the entity.
        """
        found = stored(entity)
        if len(found) != 1:
            return f"No entity named {entity!r} is known." if not found else (
                f"Several entities are named {entity!r}: " + ", ".join(f"{r.get('entity_type')}/{r.get('entity_id')}" for r in found))
        row = found[0]
        answer: list[str] = []

        def change(content: dict[str, Any] | None) -> dict[str, Any] | None:
            if content is None:
                answer.append(f"No entity named {entity!r} is known.")
                return None
            updated, message = entity_forget(content, fact)
            answer.append(message)
            return updated

        try:
            records.change(learning_id=key(row["entity_id"], row["entity_type"]), identity=identity(row["entity_id"], row["entity_type"]), change=change)
        except LearningRefused as refused:
            return f"Nothing was changed: {refused}"
        return answer[0]

    return [Function.from_callable(f) for f in (remember_about, search_entities, forget)]


def decision_tools(records: LearningRecords, *, agent_id: str | None, team_id: str | None, session_id: str | None) -> list[Function]:
    user_id = records.user_id

    def identity() -> dict[str, Any]:
        return {"learning_type": DECISION_LOG, "user_id": user_id, "agent_id": agent_id, "team_id": team_id, "session_id": session_id}

    def log_decision(
        decision: str, reasoning: str | None = None, decision_type: str | None = None, context: str | None = None,
        alternatives: str | None = None, confidence: float | None = None,
    ) -> str:
        """Log a significant decision with reasoning.

        Use this to record important choices you make: tool selection, response style, when you
        ask for clarification, when you choose between approaches.

        Args:
            decision: What you decided to do.
            reasoning: Why you made this decision.
            decision_type: Category (tool_selection, response_style, clarification, etc).
            context: The situation that required this decision.
            alternatives: Other options you considered (comma-separated).
            confidence: How confident you are (0.0 to 1.0).
        """
        if not decision or not decision.strip():
            return "Error: a decision is required"
        decision_id = f"dec_{new_uuid().hex[:12]}"
        content = {
            "id": decision_id, "decision": decision.strip(), "reasoning": reasoning, "decision_type": decision_type,
            "context": context, "alternatives": [a.strip() for a in alternatives.split(",") if a.strip()] if alternatives else None,
            "confidence": confidence, "outcome": None, "outcome_quality": None, "tags": None, "session_id": session_id,
            "user_id": user_id, "agent_id": agent_id, "team_id": team_id, "created_at": now_iso(), "updated_at": None,
        }
        try:
            records.change(learning_id=decision_id, identity=identity(), change=lambda existing: content if existing is None else None)
        except LearningRefused as refused:
            return f"Error: {refused}"
        return f"Decision logged: {decision_id}"

    def record_outcome(decision_id: str, outcome: str, outcome_quality: str | None = None) -> str:
        """Record the outcome of a previous decision.

        Args:
            decision_id: The ID of the decision to update.
            outcome: What happened as a result of the decision.
            outcome_quality: Was it good, bad, or neutral?
        """
        found: list[bool] = []

        def change(content: dict[str, Any] | None) -> dict[str, Any] | None:
            found.append(content is not None)
            if content is None:
                return None
            return {**content, "outcome": outcome, "outcome_quality": outcome_quality, "updated_at": now_iso()}

        try:
            records.change(learning_id=decision_id, identity=identity(), change=change)
        except LearningRefused:
            return f"Decision {decision_id} not found"
        return f"Outcome recorded for decision {decision_id}" if found and found[0] else f"Decision {decision_id} not found"

    def search_decisions(query: str | None = None, decision_type: str | None = None, limit: int = 5) -> str:
        """Search past decisions.

        Args:
            query: Text to search for in decisions.
            decision_type: Filter by type (tool_selection, response_style, etc).
            limit: Maximum results to return.
        """
        needle = _norm(query) if query and query.strip() else ""
        lines = []
        for row in records.rows(learning_type=DECISION_LOG):
            content = row.get("content") if isinstance(row.get("content"), dict) else {}
            if decision_type and content.get("decision_type") != decision_type:
                continue
            values = " ".join(str(v) for v in content.values() if isinstance(v, (str, int, float)))
            if needle and needle not in _norm(values):
                continue
            line = f"[{content.get('id') or row.get('learning_id')}] {content.get('decision')}"
            if content.get("reasoning"):
                line += f" - {content['reasoning']}"
            if content.get("outcome"):
                line += f" -> {content['outcome']}"
            lines.append(line)
        return "\n".join(lines[: max(1, int(limit or 5))]) if lines else "No matching decisions found."

    return [Function.from_callable(f) for f in (log_decision, record_outcome, search_decisions)]
