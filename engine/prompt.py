"""The system message the agent's model sees."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine.structured import OutputSchema


def system_message(
    *,
    description: str | None,
    instructions: str | Sequence[str] | None,
    markdown: bool,
    memories: Sequence[Mapping[str, Any]] | None,
    session_summary: Mapping[str, Any] | None,
    session_state: Mapping[str, Any] | None,
    output_schema: OutputSchema | None,
    tool_instructions: Sequence[str] = (),
    knowledge_instructions: str | None = None,
    user_profile: Mapping[str, Any] | None = None,
) -> str:
    """Agno-like sections; empty when there is nothing to say (then no system message is sent)."""
    parts: list[str] = []
    if description:
        parts.append(description)
    if instructions:
        items = [instructions] if isinstance(instructions, str) else list(instructions)
        if len(items) == 1:
            parts.append(f"<instructions>\n{items[0]}\n</instructions>")
        else:
            parts.append("<instructions>\n" + "\n".join(f"- {item}" for item in items) + "\n</instructions>")
    additional = []
    if markdown and output_schema is None:
        additional.append("- Use markdown to format your answers.")
    if additional:
        parts.append("<additional_information>\n" + "\n".join(additional) + "\n</additional_information>")
    parts.extend(text for text in tool_instructions if text)
    if memories is not None:
        if memories:
            lines = "\n".join(f"- {m.get('memory', '')}" for m in memories)
            parts.append(
                "You have access to user info and preferences from previous interactions that you can use to "
                "personalize your response:\n\n"
                f"<memories_from_previous_interactions>\n{lines}\n</memories_from_previous_interactions>\n\n"
                "Note: this information is from previous interactions and may be updated in this conversation. "
                "You should always prefer information from this conversation over the past memories."
            )
        else:
            parts.append("You have the capability to retain memories from previous interactions with the user, "
                         "but have not had any interactions with the user yet.")
    fields = {key: value for key, value in (user_profile or {}).items() if key != "user_id" and value not in (None, "", [], {})}
    if fields:
        lines = "\n".join(f"- {key}: {value}" for key, value in fields.items())
        parts.append(f"What you have learned about the user's profile:\n\n<user_profile>\n{lines}\n</user_profile>")
    if session_summary and session_summary.get("summary"):
        parts.append(
            "Here is a brief summary of your previous interactions:\n\n"
            f"<summary_of_previous_interactions>\n{session_summary['summary']}\n</summary_of_previous_interactions>"
        )
    if session_state is not None:
        parts.append(f"<session_state>\n{json.dumps(session_state, ensure_ascii=False, default=str)}\n</session_state>")
    if knowledge_instructions:
        parts.append(knowledge_instructions)
    if output_schema is not None:
        parts.append(output_schema.instructions())
    return "\n\n".join(parts)


SEARCH_KNOWLEDGE_INSTRUCTIONS = (
    "You have a knowledge base you can search using the search_knowledge_base tool. "
    "Search before answering questions\u2014don't assume you know the answer. "
    "For ambiguous questions, search first rather than asking for clarification."
)

AGENTIC_FILTER_INSTRUCTIONS = """
The knowledge base contains documents with these metadata filters: {keys}.
Always use filters when the user query indicates specific metadata.

General Guidelines:
- Always analyze the user query to identify relevant metadata.
- Use the most specific filter(s) possible to narrow down results.
- If multiple filters are relevant, combine them in the filters parameter (e.g., [{{"key": "document_type", "value": "contract"}}]).
- Ensure the filter keys match the valid metadata filters: {keys}.
""".strip()


def knowledge_instructions(filter_keys: Sequence[str] | None) -> str:
    """Agno's ``<knowledge_base>`` section (``Knowledge.build_context``), with the filter keys
    the model may use when agentic filters are on and the base names any."""
    parts = [SEARCH_KNOWLEDGE_INSTRUCTIONS]
    if filter_keys:
        parts.append(AGENTIC_FILTER_INSTRUCTIONS.format(keys=", ".join(sorted(filter_keys))))
    return "<knowledge_base>\n" + "\n".join(parts) + "\n</knowledge_base>"
