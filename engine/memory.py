"""The memory manager: let the (memory) model add, update or delete user memories.

It runs beside the answer (the model reads the user's input alone) and stages its changes;
``apply`` writes them through the caller's ``MemoryStore`` once the run completes, so a run that
fails, pauses or is cancelled changes no memory. The runtime keeps no memory of its own.
"""
from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from typing import Any

from engine.context import MemoryStore
from engine.models.base import Model, TextDelta, ToolCall, Usage
from engine.models.chain import ModelChain
from engine.tools.function import Function

logger = logging.getLogger(__name__)

MAX_MEMORY_TURNS = 3

SYSTEM_PROMPT = """\
You are a Memory Manager responsible for managing information and preferences about the user.
Read the user's message and decide whether it contains information worth remembering about the
user: their name, preferences, personal facts, or an explicit request to remember or forget
something. Do not record questions, small talk or information about anything but the user.
- To record new information, call add_memory.
- To change an existing memory, call update_memory with its memory_id.
- To remove a memory (for example when the user asks you to forget something), call delete_memory
  with its memory_id.
If nothing needs to change, answer "No changes" without calling a tool.

<existing_memories>
{memories}
</existing_memories>"""


class MemoryManager:
    def __init__(
        self,
        chain: ModelChain,
        store: MemoryStore,
        memories: list[dict[str, Any]],
    ) -> None:
        self.chain = chain
        self.store = store
        self.memories = copy.deepcopy(memories)
        self.changed = False
        self._staged: list[Callable[[], None]] = []
        self._usage: list[tuple[Model, Usage]] = []

    async def update(self, user_message: str) -> None:
        """Run the memory model on ``user_message``, staging its changes for ``apply``."""
        functions = {f.name: f for f in self._functions(user_message)}
        specs = [f.spec() for f in functions.values()]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT.format(memories=self._render())},
            {"role": "user", "content": user_message},
        ]
        for _ in range(MAX_MEMORY_TURNS):
            text, calls = "", []
            async for chunk in self.chain.astream(messages, tools=specs, task="memory", incremental=False):
                if isinstance(chunk, TextDelta):
                    text += chunk.text
                elif isinstance(chunk, ToolCall):
                    calls.append(chunk)
                elif isinstance(chunk, Usage):
                    self._usage.append((self.chain.active, chunk))
            assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                assistant["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
                ]
            messages.append(assistant)
            if not calls:
                break
            for call in calls:
                result, error = self._call(functions, call)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "tool_name": call.name, "content": result, "tool_call_error": error}
                )

    def apply(self, book_usage: Callable[[Model, Usage], None]) -> list[dict[str, Any]]:
        """Write the staged changes to the store and book the memory model's usage; returns the
        user's memories afterwards."""
        for model, usage in self._usage:
            book_usage(model, usage)
        for write in self._staged:
            try:
                write()
            except Exception as exc:  # a bad memory write must not fail the user's run
                logger.warning("memory write failed", extra={"error": type(exc).__name__})
        self._staged.clear()
        return copy.deepcopy(self.memories)

    def _render(self) -> str:
        if not self.memories:
            return "(none)"
        return "\n".join(
            f"- memory_id: {m.get('memory_id')} | memory: {' '.join(str(m.get('memory', '')).split())}" for m in self.memories
        )

    def _call(self, functions: dict[str, Function], call: ToolCall) -> tuple[str, bool]:
        function = functions.get(call.name)
        if function is None:
            return f"Error: unknown tool {call.name!r}", True
        try:
            args = json.loads(call.arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
            return str(function.execute(args)), False
        except Exception as exc:  # a bad memory call must not fail the user's run
            logger.warning("memory tool failed", extra={"tool": call.name, "error": type(exc).__name__})
            return f"Error: {exc}", True

    def _functions(self, user_message: str) -> list[Function]:
        def add_memory(memory: str, topics: list[str] | None = None) -> str:
            """Add a memory about the user.

            Args:
                memory: The memory, one fact in third person ("User's name is Ada").
                topics: Short topics for the memory, e.g. ["name"].
            """
            staged = {"memory": memory, "topics": list(topics or [])}
            self.memories.append(staged)

            def write() -> None:
                self._replace(staged, self.store.add(memory=memory, topics=list(topics or []), input=user_message))

            self._staged.append(write)
            self.changed = True
            return "Memory added successfully"

        def update_memory(memory_id: str, memory: str, topics: list[str] | None = None) -> str:
            """Replace an existing memory.

            Args:
                memory_id: The id of the memory to update.
                memory: The new text of the memory.
                topics: Short topics for the memory.
            """
            index = self._index(memory_id)
            staged = self.memories[index] = {**self.memories[index], "memory": memory, "topics": list(topics or [])}

            def write() -> None:
                self._replace(staged, self.store.update(memory_id=memory_id, memory=memory, topics=list(topics or [])))

            self._staged.append(write)
            self.changed = True
            return "Memory updated successfully"

        def delete_memory(memory_id: str) -> str:
            """Delete a memory.

            Args:
                memory_id: The id of the memory to delete.
            """
            del self.memories[self._index(memory_id)]
            self._staged.append(lambda: self.store.delete(memory_id=memory_id))
            self.changed = True
            return "Memory deleted successfully"

        def update_user_profile(field: str, value: str) -> str:
            """Set a field of the user's profile (their name, preferred name, role, ...).

            Args:
                field: The profile field, e.g. "name".
                value: Its value, e.g. "Ada".
            """
            self._staged.append(lambda: self.store.update_profile(field=field, value=value))  # type: ignore[attr-defined]
            self.changed = True
            return "Profile updated successfully"

        functions = [add_memory, update_memory, delete_memory]
        # A learning store with the profile on (engine.learning) also keeps the user's profile.
        if getattr(self.store, "profile_enabled", False):
            functions.append(update_user_profile)
        return [Function.from_callable(f) for f in functions]

    def _replace(self, staged: dict[str, Any], stored: dict[str, Any]) -> None:
        """Put the store's row where the staged one is (unless a later change removed it)."""
        for index, memory in enumerate(self.memories):
            if memory is staged:
                self.memories[index] = stored

    def _index(self, memory_id: str) -> int:
        for index, memory in enumerate(self.memories):
            if memory.get("memory_id") == memory_id:
                return index
        raise KeyError(f"No memory with memory_id {memory_id!r}")
