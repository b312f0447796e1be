"""The offline model's answers for the agentic learning stores (engine.learning_tools), so the demo
shows entity memory and decision logs without a provider key.

With ``remember_about`` offered, each sentence ``<Name> is a <type> that <fact>`` (``which``,
``who`` too; the name capitalised, the type one word) calls
``remember_about(entity=<Name>, entity_type=<type>, facts=[<fact>])``, and ``<Name> is a <type>.``
alone records the entity without facts. With ``log_decision`` offered, ``I decided to <X>
because <Y>`` (or ``we decided``; the reason optional) calls ``log_decision(decision=<X>,
reasoning=<Y>)``. Both in one message make both calls in one turn. In an echo, the entities of the
system prompt's ``<entity_memory>`` block are named: ``I know about 1 entity: Acme (company).``
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine.models.base import ToolCall, message_text

_SENTENCE = re.compile(r"[^.!?\n]+")
_ENTITY = re.compile(r"^\s*(?:[Rr]emember(?: that)?:?\s+)?([A-Z][\w&'-]*(?: [A-Z][\w&'-]*)*) is an? ([a-z]+)(?:\s+(?:that|which|who)\s+(.+?))?\s*$")
_DECISION = re.compile(r"\b(?:I|we|We) decided to (.+?)(?: because (.+?))?\s*$")
_DIRECTORY_LINE = re.compile(r"^- (.+?) \(([^)]+)\)(?::| \||$)")


def learning_calls(user_text: str, tool_names: set[str], salt: int) -> list[ToolCall]:
    """The learning tool calls the user's message asks for (none when no such tool is offered)."""
    wanted: list[tuple[str, dict[str, Any]]] = []
    for sentence in _SENTENCE.findall(user_text):
        entity = _ENTITY.match(sentence) if "remember_about" in tool_names else None
        if entity:
            facts = [entity.group(3).strip()] if entity.group(3) else []
            wanted.append(("remember_about", {"entity": entity.group(1), "entity_type": entity.group(2), "facts": facts}))
            continue
        decision = _DECISION.search(sentence) if "log_decision" in tool_names else None
        if decision:
            args = {"decision": decision.group(1).strip()}
            if decision.group(2):
                args["reasoning"] = decision.group(2).strip()
            wanted.append(("log_decision", args))
    digest = hashlib.sha1(f"{salt}:{user_text}".encode()).hexdigest()[:8]
    return [
        ToolCall(id=f"call_{digest}_learn_{index}", name=name, arguments=json.dumps(args, ensure_ascii=False))
        for index, (name, args) in enumerate(wanted)
    ]


def known_entities(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The echo's sentence about the entities of the system prompt's entity memory, if any."""
    for message in messages:
        if message.get("role") != "system":
            continue
        block = re.search(r"<entity_memory>\n(.*?)\n</entity_memory>", message_text(message), re.S)
        if not block:
            return None
        found = [f"{m.group(1)} ({m.group(2)})" for m in map(_DIRECTORY_LINE.match, block.group(1).splitlines()) if m]
        if not found:
            return None
        noun = "entity" if len(found) == 1 else "entities"
        return f"I know about {len(found)} {noun}: {'; '.join(found)}."
    return None
