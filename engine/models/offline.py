"""The offline demo model, ``offline:demo``: deterministic, no network, clearly a demo.

It exists so that the whole pipeline (streaming, usage, tools, human-in-the-loop, history,
memories, summaries, structured output, cancellation, retries) runs without a provider key.

Grammar. Only the **last user message** is read, line by line; a line is a command when it starts
with one of these words:

``/call <tool_name> <json object of args>``
    Ask for a tool call, e.g. ``/call add {"a": 2, "b": 3}``. Several ``/call`` lines make several
    tool calls in one turn. Arguments may be omitted (``{}``); invalid JSON is passed through as
    is, so the run reports the decoding error back to the model.
``/slow <seconds>``
    Stream the answer slowly: the delay is spread evenly over the deltas (sleeping after each).
    For cancel, disconnect and reload demos. The sleep function is ``OfflineModel(sleep=...)``,
    else this module's ``sleep`` attribute (patchable; ``asyncio.sleep``, so a slow answer holds
    no thread); a sync function is called, an async one awaited.
``/fail``
    Raise a ``FatalModelError`` (like a 401 or 400 from a provider).
``/fail-retryable``
    Raise a ``RetryableModelError`` (like a 5xx or 429): retries and fallback models kick in.
``/markdown [code] [table] [list] [math]``
    Answer with rich Markdown instead of the echo (5. below): a highlighted code block, a table,
    a nested list and math (``$...$`` inline, ``$$...$$`` displayed); the parts named, or all.

Answers, in order of precedence:

1. As a team leader (its system message has a ``<team_members>`` block and team tools are
   offered) and with no ``/call`` line of a tool offered to it: it delegates the user's text
   (commands stripped; but ``/call`` lines of tools it does not have, a member's, are kept, so
   the member calls them) to the member whose id or name the text outside commands mentions,
   else to the first member:
   ``delegate_task_to_member(member_id, task)`` (route, coordinate) or
   ``delegate_task_to_members(task)`` (broadcast), once; in tasks mode one call a turn,
   ``create_task(title=<first six words>, description=<text>, assignee=<member>)``, then
   ``execute_task(task_id, member_id)`` for the id in the create result, then
   ``mark_all_complete(summary=<the answer below>)``.
2. Tool results after the last user message (the turn after tools ran): with members' answers
   among them (results of the delegation tools and ``execute_task``),
   ``(offline demo) The team answered: <answer> | <answer>`` (one item per line of those results,
   ``Task [..] completed. Result:`` left out); otherwise one line per result,
   ``Tool add returned: 5``, ``Tool delete_file was rejected by the user: <note>`` (a result
   starting with "Function call was rejected by the user") or ``Tool x failed: <error>``.
   A ``search_knowledge_base`` result reads ``(offline demo) From the knowledge base (2
   passages), "<name>": <the best passage, up to 300 characters>`` (``... found nothing about
   that.`` for no documents).
3. ``/call`` lines, when tools may be called: the tool calls, no text.
3a. With learning's tools offered (``remember_about``, ``log_decision``): the calls a message such
   as ``Acme is a company that uses PostgreSQL. We decided to use it because it is reliable.``
   asks for (``offline_learning.py``, which also names, in an echo, the entities it knows).
3b. With ``search_knowledge_base`` offered and a message that asks something (a ``?``, or it
   starts with a question word such as what, how, who, explain or tell), and no references
   already added to it: ``search_knowledge_base(query=<the text, commands stripped>)``.
4. With a structured-output JSON schema: a JSON object that validates against it, filled
   deterministically (strings ``"example <field>"``, numbers 1 or the minimum, booleans true,
   arrays of one item, the first enum value). It is also the answer after tool results (so it
   takes precedence over 2); only 1 and ``/call`` lines with tools offered come before it.
5. Otherwise an echo: ``(offline demo) You said: <text>`` plus one sentence about history,
   ``This is the first message I see from you.`` or
   ``I can see 2 earlier messages from you; the previous one was: "<text>".``, plus, when
   memories are in the system prompt, ``I remember 2 things about you: <m1>; <m2>.``
   References added to the message (``add_knowledge_to_context``) are not echoed; instead
   ``The knowledge base gave me 2 passages; the best, from "<name>": <passage>``.

Options: it takes every provider's generation options (``models/options.py``) and ignores them,
except that with ``reasoning_effort`` (other than ``"none"``) or ``thinking_budget`` it streams
reasoning deltas, ``(offline demo) Thinking about "<text>" before answering.``, before a chat
answer that is not a tool call or an answer to tool results. It cannot summarise
(``summarises = False``): ``compress_tool_results`` compacts its long tool results instead.

Other tasks the runtime gives it:

* reasoning: streams reasoning deltas ``The user asks: "<text>". I will answer directly ...``.
* memory (as the memory model; tools add_memory/update_memory/delete_memory): from the user text,
  ``my name is X`` adds (or updates an existing name memory to) ``User's name is X``, and where
  the tool is offered (a learning store with the profile on) calls ``update_user_profile`` with
  ``{"field": "name", "value": X}``;
  ``I like X`` / ``I love X`` adds ``User likes X``; ``remember that X`` adds ``X``;
  ``forget X`` deletes memories containing X (``forget everything`` deletes all). After the tool
  results it answers ``Memories updated.``; with nothing to do, ``No memory changes.``
* summary: JSON ``{"summary": "The user sent N message(s). Most recently: \"<text>\".",
  "topics": [up to three words of five letters or more from the user's messages]}``.

Usage: input tokens = whitespace-separated words in all messages (tool-call arguments included),
output tokens = words produced; total = their sum.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from engine.aio import maybe_await
from engine.errors import FatalModelError, RetryableModelError
from engine.models.offline_learning import known_entities, learning_calls
from engine.models.options import definition_options
from engine.models.base import (
    Model,
    ModelChunk,
    ReasoningDelta,
    Task,
    TextDelta,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
    message_text,
)

# Module-level so tests and demos can patch it: ``monkeypatch.setattr(offline, "sleep", fake)``.
sleep: Callable[[float], Awaitable[None] | None] = asyncio.sleep

REJECTED_PREFIX = "Function call was rejected by the user"
_CALL_RE = re.compile(r"^/call\s+(\S+)\s*(.*)$")
# "/slow 20" alone, or with the message after it on the same line ("/slow 20 tell me a story").
_SLOW_RE = re.compile(r"^/slow\s+([0-9]*\.?[0-9]+)(?:\s+(.*))?$")
_COMMAND_RE = re.compile(r"^/(call|slow|fail|fail-retryable|markdown)\b")
_MARKDOWN_RE = re.compile(r"^/markdown(?:\s+(.*))?$")
_MEMORY_LINE_RE = re.compile(r"^- memory_id: (\S+) \| memory: (.*)$")
_CLAUSE_END = r"[^,.;!?\n]+"
_MEMBER_LINE_RE = re.compile(r"^- member_id: (\S+) \| name: (.*?)(?: \| role: .*)?$")
_TASK_DONE_RE = re.compile(r"^Task \[[^\]]+\] completed\. Result: (.*)$", re.S)
# What the runtime appends to a user message with add_knowledge_to_context (runner.py).
_REFERENCES_RE = re.compile(r"\n\nUse the following references from the knowledge base if it helps:\n<references>\n(.*?)\n</references>", re.S)
_QUESTION_WORDS = frozenset(
    "what how who whom whose which why when where is are was were do does did can could should would will "
    "explain describe tell summarize summarise list find search show".split()
)
SEARCH_TOOL = "search_knowledge_base"
EXCERPT_CHARS = 300
# The team tools it knows (team.py, team_tasks.py), and those whose results are members' answers.
TEAM_TOOLS = frozenset({"delegate_task_to_member", "delegate_task_to_members", "create_task", "execute_task", "mark_all_complete"})
DELEGATING_TOOLS = frozenset({"delegate_task_to_member", "delegate_task_to_members", "execute_task"})


class OfflineModel(Model):
    provider = "Offline"
    name = "OfflineModel"
    summarises = False

    def __init__(self, id: str = "demo", *, sleep: Callable[[float], Awaitable[None] | None] | None = None, **options: Any) -> None:
        super().__init__(id)
        self._sleep = sleep
        definition_options("offline", options)
        # Any provider's options are taken, so a definition can switch to the offline model and
        # back; they change nothing but this: asked to reason, it thinks aloud before answering.
        self.options = options
        self.thinks = bool(options.get("thinking_budget")) or options.get("reasoning_effort") not in (None, "none")

    async def astream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        output_schema: Mapping[str, Any] | None = None,
        task: Task = "chat",
        incremental: bool = True,
    ) -> AsyncIterator[ModelChunk]:
        input_tokens = sum(_words(m) for m in messages)
        user_index, user_text = _last_user(messages)
        after_user = list(messages[user_index + 1 :]) if user_index >= 0 else []
        tool_names = {t.name for t in tools} if tool_choice != "none" else set()

        calls: list[ToolCall] = []
        reasoning = ""
        text = ""
        if task == "reasoning":
            reasoning = (
                f'The user asks: "{_strip_commands(user_text)}". '
                "I will answer directly and call tools when the message asks for them."
            )
        elif task == "memory":
            if any(m.get("role") == "tool" for m in after_user):
                text = "Memories updated."
            else:
                calls = _memory_calls(user_text, _existing_memories(messages), tool_names, user_text)
                text = "" if calls else "No memory changes."
        elif task == "summary":
            text = json.dumps(_summary(user_text), ensure_ascii=False)
        else:
            if "/fail-retryable" in _commands(user_text):
                raise RetryableModelError("offline model: /fail-retryable requested", provider=self.provider, status_code=503)
            if "/fail" in _commands(user_text):
                raise FatalModelError("offline model: /fail requested", provider=self.provider, status_code=400)
            tool_results = [m for m in after_user if m.get("role") == "tool"]
            team_calls = _team_calls(messages, user_text, tool_results, tool_names) if _forwards_calls(user_text, tool_names) else []
            if team_calls:
                calls = team_calls
            elif output_schema is not None and (tool_results or not _call_lines(user_text) or not tool_names):
                text = json.dumps(fill_schema(output_schema, output_schema), ensure_ascii=False)
            elif tool_results:
                text = _team_answer(tool_results) or "\n".join(_describe_tool_result(m) for m in tool_results)
            elif _call_lines(user_text) and tool_names:
                calls = _tool_calls(user_text, len(messages))
            elif learned := learning_calls(user_text, tool_names, len(messages)):
                calls = learned  # entity memory and decision logs (offline_learning.py)
            elif SEARCH_TOOL in tool_names and _REFERENCES_RE.search(user_text) is None and _asks(user_text):
                calls = _search_call(user_text, len(messages))
            elif (shown := _markdown_parts(user_text)) is not None:
                text = markdown_sample(shown)
            else:
                text = _echo(messages, user_index, user_text)

        if self.thinks and task == "chat" and not calls and not tool_results:
            for piece in _pieces(f'(offline demo) Thinking about "{_strip_commands(user_text)}" before answering.'):
                yield ReasoningDelta(piece)
        delay = _slow_seconds(user_text) if task == "chat" else 0.0
        pieces = _pieces(reasoning or text)
        pause = delay / len(pieces) if pieces and delay > 0 else 0.0
        do_sleep = self._sleep or sleep
        for piece in pieces:
            yield ReasoningDelta(piece) if reasoning else TextDelta(piece)
            if pause:
                await maybe_await(do_sleep(pause))
        for call in calls:
            yield call
        output_tokens = len((reasoning or text).split()) + sum(len(c.arguments.split()) + 1 for c in calls)
        yield Usage(input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens)


# What ``/markdown`` answers, a part per kind: so the chat's renderer (code highlighting, tables,
# lists, math) can be seen and tested without a provider key.
MARKDOWN_PARTS: dict[str, str] = {
    "code": (
        "### A code block\n\n"
        "```python\n"
        "def fibonacci(n: int) -> int:\n"
        "    \"\"\"The n-th Fibonacci number.\"\"\"\n"
        "    a, b = 0, 1\n"
        "    for _ in range(n):\n"
        "        a, b = b, a + b\n"
        "    return a\n"
        "```"
    ),
    "table": (
        "### A table\n\n"
        "| model | needs a key | calls the network |\n"
        "|---|---|---|\n"
        "| `offline:demo` | no | no |\n"
        "| `openai:gpt-4o-mini` | yes | yes |"
    ),
    "list": (
        "### A list\n\n"
        "1. **Upload** a file in *My documents*.\n"
        "2. Ask the Docs Agent about it:\n"
        "   - the answer cites the document,\n"
        "   - and its source opens on the passage."
    ),
    "math": (
        "### Math\n\n"
        "Inline, $e^{i\\pi} + 1 = 0$; displayed:\n\n"
        "$$\n\\int_0^1 x^2 \\, dx = \\frac{1}{3}\n$$"
    ),
}


def _markdown_parts(text: str) -> list[str] | None:
    """The parts a ``/markdown [code|table|list|math ...]`` line asks for (all when it names none),
    or None without such a line."""
    for line in text.splitlines():
        match = _MARKDOWN_RE.match(line.strip())
        if match:
            named = [part for part in (match.group(1) or "").lower().split() if part in MARKDOWN_PARTS]
            return named or list(MARKDOWN_PARTS)
    return None


def markdown_sample(parts: Sequence[str]) -> str:
    """``/markdown``'s answer: the parts asked for, under a line that says what it is."""
    return "\n\n".join(["(offline demo) Some Markdown, to see how replies are rendered:", *(MARKDOWN_PARTS[part] for part in parts)])


def _words(message: Mapping[str, Any]) -> int:
    count = len(message_text(message).split())
    for call in message.get("tool_calls") or []:
        count += len(str(call.get("function", {}).get("arguments", "")).split())
    return count


def _last_user(messages: Sequence[Mapping[str, Any]]) -> tuple[int, str]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index, message_text(messages[index])
    return -1, ""


def _commands(text: str) -> set[str]:
    return {line.strip().split()[0] for line in text.splitlines() if _COMMAND_RE.match(line.strip())}


def _call_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if _CALL_RE.match(line.strip())]


def _strip_commands(text: str) -> str:
    kept = []
    for line in text.splitlines():
        if not _COMMAND_RE.match(line.strip()):
            kept.append(line)
        elif slow := _SLOW_RE.match(line.strip()):
            kept.append(slow.group(2) or "")  # the message typed after "/slow N"
    return " ".join(" ".join(kept).split())


def _slow_seconds(text: str) -> float:
    for line in text.splitlines():
        match = _SLOW_RE.match(line.strip())
        if match:
            return float(match.group(1))
    return 0.0


def _pieces(text: str) -> list[str]:
    """Word-sized deltas whose concatenation is exactly ``text``."""
    return re.findall(r"\s*\S+\s*", text) if text.strip() else ([text] if text else [])


def _tool_calls(user_text: str, salt: int) -> list[ToolCall]:
    digest = hashlib.sha1(f"{salt}:{user_text}".encode()).hexdigest()[:8]
    calls = []
    for index, line in enumerate(_call_lines(user_text)):
        match = _CALL_RE.match(line)
        assert match is not None
        arguments = match.group(2).strip() or "{}"
        calls.append(ToolCall(id=f"call_{digest}_{index}", name=match.group(1), arguments=arguments))
    return calls


def _team_members(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(member_id, name)`` pairs from a team leader's ``<team_members>`` block (team.py)."""
    for message in messages:
        if message.get("role") != "system":
            continue
        block = re.search(r"<team_members>\n(.*?)\n</team_members>", message_text(message), re.S)
        if block:
            return [(m.group(1), m.group(2)) for m in map(_MEMBER_LINE_RE.match, block.group(1).splitlines()) if m]
    return []


def _pick_member(members: list[tuple[str, str]], text: str) -> str:
    """The first member whose id or name the user mentions, else the first member."""
    for member_id, name in members:
        for word in (member_id, name):
            if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.I):
                return member_id
    return members[0][0]


def _forwards_calls(user_text: str, tool_names: set[str]) -> bool:
    """Whether a team leader delegates this message: always without ``/call`` lines; with them,
    only when none names a tool the leader has (they are a member's: the task carries them)."""
    names = {_CALL_RE.match(line).group(1) for line in _call_lines(user_text)}  # type: ignore[union-attr]
    return not names & tool_names


def _team_calls(
    messages: Sequence[Mapping[str, Any]], user_text: str, tool_results: list[Mapping[str, Any]], tool_names: set[str]
) -> list[ToolCall]:
    """A team leader's delegation for this turn, or none (then it answers from the results)."""
    members = _team_members(messages)
    if not members or not tool_names & TEAM_TOOLS:
        return []
    said = _strip_commands(user_text)
    # /call lines of a member's tools go to the member as they are, so it calls them.
    task = user_text.strip() if _call_lines(user_text) else (said or user_text.strip())
    member_id = _pick_member(members, said if _call_lines(user_text) else task)
    digest = hashlib.sha1(f"{len(messages)}:{user_text}".encode()).hexdigest()[:8]

    def call(name: str, **args: Any) -> list[ToolCall]:
        return [ToolCall(id=f"call_team_{digest}", name=name, arguments=json.dumps(args, ensure_ascii=False))]

    if {"create_task", "execute_task", "mark_all_complete"} <= tool_names:
        last = tool_results[-1] if tool_results else None
        if last is None:
            return call("create_task", title=" ".join(task.split()[:6]), description=task, assignee=member_id)
        if last.get("tool_name") == "create_task":
            found = re.search(r"\[(task-\d+)\]", message_text(last))
            if found:
                return call("execute_task", task_id=found.group(1), member_id=member_id)
        if last.get("tool_name") in ("create_task", "execute_task"):
            return call("mark_all_complete", summary=_team_answer(tool_results) or "(offline demo) Nothing was done.")
        return []
    if tool_results:
        return []
    if "delegate_task_to_members" in tool_names:
        return call("delegate_task_to_members", task=task)
    if "delegate_task_to_member" in tool_names:
        return call("delegate_task_to_member", member_id=member_id, task=task)
    return []


def _team_answer(tool_results: list[Mapping[str, Any]]) -> str | None:
    """``(offline demo) The team answered: ...`` from the members' answers among the results."""
    answers: list[str] = []
    for message in tool_results:
        if message.get("tool_name") not in DELEGATING_TOOLS:
            continue
        content = message_text(message)
        done = _TASK_DONE_RE.match(content)
        answers.extend(line.strip() for line in (done.group(1) if done else content).splitlines() if line.strip())
    return f"(offline demo) The team answered: {' | '.join(answers)}" if answers else None


def _asks(text: str) -> bool:
    said = _strip_commands(text)
    words = re.findall(r"[a-z']+", said.lower())
    return "?" in said or bool(words and words[0] in _QUESTION_WORDS)


def _search_call(user_text: str, salt: int) -> list[ToolCall]:
    query = _strip_commands(user_text)
    digest = hashlib.sha1(f"{salt}:{user_text}".encode()).hexdigest()[:8]
    return [ToolCall(id=f"call_kb_{digest}", name=SEARCH_TOOL, arguments=json.dumps({"query": query}, ensure_ascii=False))]


def _passages(text: str) -> list[Mapping[str, Any]] | None:
    """The passages of a knowledge search result (JSON, as the runtime formats them by default)."""
    try:
        docs = json.loads(text)
    except ValueError:
        return None
    return [d for d in docs if isinstance(d, Mapping)] if isinstance(docs, list) else None


def _best_passage(docs: list[Mapping[str, Any]]) -> str:
    best = docs[0]
    content = " ".join(str(best.get("content") or "").split())
    if len(content) > EXCERPT_CHARS:
        content = content[:EXCERPT_CHARS].rstrip() + "..."
    return f'"{best.get("name") or "untitled"}": {content}'


def _describe_tool_result(message: Mapping[str, Any]) -> str:
    name = message.get("tool_name") or "tool"
    content = message_text(message)
    if name == SEARCH_TOOL and not message.get("tool_call_error"):
        docs = _passages(content)
        if docs:
            noun = "passage" if len(docs) == 1 else "passages"
            return f"(offline demo) From the knowledge base ({len(docs)} {noun}), {_best_passage(docs)}"
        if docs is not None or content.startswith("No documents found"):
            return "(offline demo) The knowledge base found nothing about that."
    if content.startswith(REJECTED_PREFIX):
        note = content[len(REJECTED_PREFIX) :].lstrip(":. ").strip()
        return f"Tool {name} was rejected by the user" + (f": {note}" if note else ".")
    if message.get("tool_call_error"):
        return f"Tool {name} failed: {content}"
    return f"Tool {name} returned: {content}"


def _echo(messages: Sequence[Mapping[str, Any]], user_index: int, user_text: str) -> str:
    earlier = [_REFERENCES_RE.sub("", message_text(m)) for m in messages[: max(user_index, 0)] if m.get("role") == "user"]
    references = _REFERENCES_RE.search(user_text)
    said = _strip_commands(_REFERENCES_RE.sub("", user_text)) or "(only commands)"
    parts = [f"(offline demo) You said: {said}"]
    if earlier:
        noun = "message" if len(earlier) == 1 else "messages"
        parts.append(
            f'I can see {len(earlier)} earlier {noun} from you; the previous one was: "{_strip_commands(earlier[-1])}".'
        )
    else:
        parts.append("This is the first message I see from you.")
    memories = _system_memories(messages)
    if memories:
        noun = "thing" if len(memories) == 1 else "things"
        parts.append(f"I remember {len(memories)} {noun} about you: {'; '.join(memories)}.")
    parts += [known] if (known := known_entities(messages)) else []
    if references is not None:
        docs = _passages(references.group(1))
        if docs:
            noun = "passage" if len(docs) == 1 else "passages"
            parts.append(f"The knowledge base gave me {len(docs)} {noun}; the best, from {_best_passage(docs)}")
        else:
            parts.append("The knowledge base gave me references.")
    return " ".join(parts)


def _system_memories(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Memory lines from the agent's system prompt (see prompt.py)."""
    for message in messages:
        if message.get("role") != "system":
            continue
        block = re.search(
            r"<memories_from_previous_interactions>\n(.*?)\n</memories_from_previous_interactions>",
            message_text(message),
            re.S,
        )
        if block:
            return [line[2:].strip() for line in block.group(1).splitlines() if line.startswith("- ")]
    return []


def _existing_memories(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(memory_id, memory)`` pairs from the memory manager's system prompt (see memory.py)."""
    found: list[tuple[str, str]] = []
    for message in messages:
        if message.get("role") == "system":
            for line in message_text(message).splitlines():
                match = _MEMORY_LINE_RE.match(line.strip())
                if match:
                    found.append((match.group(1), match.group(2)))
    return found


def _memory_calls(
    text: str, existing: list[tuple[str, str]], tool_names: set[str], salt: str
) -> list[ToolCall]:
    operations: list[tuple[str, dict[str, Any]]] = []
    known = {memory.lower() for _, memory in existing}

    # The first word after "my name is", plus capitalised words that follow (a surname).
    for match in re.finditer(r"\b(?i:my name is) ([\w'-]+(?: [A-Z][\w'-]*)*)", text):
        memory = f"User's name is {match.group(1).strip()}"
        current = next((mid for mid, m in existing if "name is" in m.lower()), None)
        if current is not None:
            operations.append(("update_memory", {"memory_id": current, "memory": memory, "topics": ["name"]}))
        elif memory.lower() not in known:
            operations.append(("add_memory", {"memory": memory, "topics": ["name"]}))
        # Offered only by a learning store that keeps the user's profile (engine.learning).
        operations.append(("update_user_profile", {"field": "name", "value": match.group(1).strip()}))
    for match in re.finditer(rf"\bI (?:like|love|enjoy) ({_CLAUSE_END})", text, re.I):
        memory = f"User likes {match.group(1).strip()}"
        if memory.lower() not in known:
            operations.append(("add_memory", {"memory": memory, "topics": ["preferences"]}))
    for match in re.finditer(r"\bremember (?:that )?([^.;!?\n]+)", text, re.I):
        memory = match.group(1).strip()
        if memory.lower() not in known:
            operations.append(("add_memory", {"memory": memory, "topics": ["general"]}))
    for match in re.finditer(r"\bforget (?:that |about )?([^.;!?\n]+)", text, re.I):
        target = match.group(1).strip().lower()
        if target in ("everything", "all", "all memories", "everything about me"):
            doomed = [mid for mid, _ in existing]
        else:
            needles = {target, target.removeprefix("my "), re.sub(r"^i (?:like|love|enjoy) ", "likes ", target)}
            doomed = [mid for mid, m in existing if any(n and n in m.lower() for n in needles)]
        operations.extend(("delete_memory", {"memory_id": mid}) for mid in doomed)

    digest = hashlib.sha1(salt.encode()).hexdigest()[:8]
    return [
        ToolCall(id=f"call_mem_{digest}_{i}", name=name, arguments=json.dumps(args, ensure_ascii=False))
        for i, (name, args) in enumerate(operations)
        if name in tool_names
    ]


def _summary(transcript: str) -> dict[str, Any]:
    user_lines = [line[len("User: ") :].strip() for line in transcript.splitlines() if line.startswith("User: ")]
    if not user_lines:
        return {"summary": "The conversation has no user messages yet.", "topics": []}
    noun = "message" if len(user_lines) == 1 else "messages"
    topics: list[str] = []
    for line in user_lines:
        for word in re.findall(r"[A-Za-z]{5,}", _strip_commands(line)):
            if word.lower() not in topics and len(topics) < 3:
                topics.append(word.lower())
    latest = _strip_commands(user_lines[-1])
    return {"summary": f'The user sent {len(user_lines)} {noun}. Most recently: "{latest}".', "topics": topics}


def fill_schema(schema: Mapping[str, Any], root: Mapping[str, Any], name: str = "value") -> Any:
    """A deterministic value that validates against a simple JSON schema."""
    if "$ref" in schema:
        ref = str(schema["$ref"])
        target: Any = root
        for part in ref.lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return fill_schema(target, root, name)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return fill_schema(options[0], root, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return {key: fill_schema(sub, root, key) for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        items = schema.get("items") or {"type": "string"}
        return [fill_schema(items, root, name) for _ in range(max(1, int(schema.get("minItems", 1))))]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return f"example {name}"
