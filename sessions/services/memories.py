"""Writes to user memories: create, update, upsert, delete, and optimization (merging)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.tenancy import scope_queryset

from ..models import UserMemory
from ..selectors import memory_list_for_user
from .runs import new_id


def memory_topics_key(topics: Iterable[str]) -> str:
    cleaned = [str(topic).strip() for topic in topics if str(topic).strip()]
    return "," + ",".join(cleaned) + "," if cleaned else ""


def memory_create(
    *,
    user_id: str | None,
    memory: str,
    topics: Iterable[str] = (),
    input: str = "",
    agent_id: str | None = None,
    team_id: str | None = None,
    memory_id: str | None = None,
) -> UserMemory:
    now = timezone.now()
    topic_list = [str(topic) for topic in topics]
    row = UserMemory(
        memory_id=memory_id or new_id(),
        user_id=user_id,
        memory=memory,
        topics=topic_list,
        topics_key=memory_topics_key(topic_list),
        input=input,
        agent_id=agent_id,
        team_id=team_id,
        created_at=now,
        updated_at=now,
    )
    row.save(force_insert=True)
    return row


def memory_update(*, user: Any, memory_id: str, memory: str, topics: Iterable[str] | None = None) -> UserMemory | None:
    row = scope_queryset(UserMemory.objects, user).filter(pk=memory_id).first()
    if row is None:
        return None
    row.memory = memory
    fields = ["memory", "updated_at"]
    if topics is not None:
        row.topics = [str(topic) for topic in topics]
        row.topics_key = memory_topics_key(row.topics)
        fields += ["topics", "topics_key"]
    row.updated_at = timezone.now()
    row.save(update_fields=fields)
    return row


def memory_delete(*, user: Any, memory_ids: Iterable[str]) -> int:
    deleted, _ = scope_queryset(UserMemory.objects, user).filter(pk__in=list(memory_ids)).delete()
    return deleted


def memory_upsert(
    *,
    user: Any,
    owner_id: str,
    memory_id: str,
    memory: str,
    topics: Iterable[str],
    create_missing: bool,
) -> UserMemory | None:
    """Replace a memory's text and topics; create it under ``owner_id`` if it is missing.

    ``user`` is the caller's scope: a memory outside it counts as missing. With
    ``create_missing=False`` (isolated callers) a missing memory is None rather than created,
    so nobody can write to an id someone else owns. Its owner, agent and team never change.
    """
    topic_list = [str(topic) for topic in topics]
    row = memory_update(user=user, memory_id=memory_id, memory=memory, topics=topic_list)
    if row is not None or not create_missing:
        return row
    try:
        with transaction.atomic():
            return memory_create(user_id=owner_id, memory=memory, topics=topic_list, memory_id=memory_id)
    except IntegrityError:
        # Created by a concurrent request in the meantime (or outside the caller's scope).
        return memory_update(user=user, memory_id=memory_id, memory=memory, topics=topic_list)


# --- Optimization ----------------------------------------------------------------------------

class MemoryOptimizationError(Exception):
    """The model asked to optimize the memories failed."""


class UnusableModel(Exception):
    """The model string names no model this server can build."""


class MemoriesChanged(Exception):
    """The user's memories changed while the optimization was being worked out."""


@dataclass(frozen=True)
class OptimizedMemory:
    memory_id: str
    memory: str
    topics: list[str]
    agent_id: str | None
    team_id: str | None
    user_id: str | None
    updated_at: datetime
    # Ids of the memories folded into this one (itself included).
    merged_ids: tuple[str, ...]
    changed: bool


@dataclass(frozen=True)
class MemoryOptimization:
    memories: list[OptimizedMemory]
    memories_before: int
    memories_after: int
    tokens_before: int
    tokens_after: int
    applied: bool

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def reduction_percentage(self) -> float:
        if not self.tokens_before:
            return 0.0
        return round(self.tokens_saved / self.tokens_before * 100.0, 2)


def memory_tokens(text: str) -> int:
    """Token count of a memory for optimization statistics: whitespace-separated words."""
    return len(text.split())


def _normalized(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(" .!;")


def _contains_phrase(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` on word boundaries (so "tea" is not found in "steam")."""
    start = text.find(phrase)
    while start != -1:
        end = start + len(phrase)
        before_ok = start == 0 or not text[start - 1].isalnum()
        after_ok = end == len(text) or not text[end].isalnum()
        if before_ok and after_ok:
            return True
        start = text.find(phrase, start + 1)
    return False


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."


def _merged_topics(groups: Iterable[Iterable[str]]) -> list[str]:
    seen: dict[str, str] = {}
    for topics in groups:
        for topic in topics:
            seen.setdefault(str(topic).casefold(), str(topic))
    return list(seen.values())


def _common(values: Iterable[str | None]) -> str | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


@dataclass
class _Draft:
    rows: list[UserMemory]
    text: str
    topics: list[str]


def memory_merge_plan(memories: list[UserMemory], *, now: datetime) -> list[OptimizedMemory]:
    """Fewer memories carrying the same facts, worked out without a model.

    1. Exact duplicates (ignoring case, spacing and final punctuation) collapse into one.
    2. A memory whose whole text appears inside another memory (on word boundaries) is dropped
       into that one: its words are all still there.
    3. Memories sharing a topic (directly or through each other) become one memory whose text
       is their sentences in order and whose topics are the union. Memories without topics
       stay as they are.
    Each result keeps the id of its oldest memory; ``memories`` come oldest first.
    """
    drafts: list[_Draft] = []
    by_text: dict[str, _Draft] = {}
    for row in memories:
        key = _normalized(row.memory)
        if key in by_text:
            draft = by_text[key]
            draft.rows.append(row)
            draft.topics = _merged_topics([draft.topics, row.topics or []])
            continue
        draft = _Draft(rows=[row], text=row.memory, topics=_merged_topics([row.topics or []]))
        by_text[key] = draft
        drafts.append(draft)

    # Longest first, so a memory is folded into the fullest text containing it.
    keys = {id(draft): _normalized(draft.text) for draft in drafts}
    absorbed: set[int] = set()
    longest_first = sorted(drafts, key=lambda d: -len(keys[id(d)]))
    for small in reversed(longest_first):
        for large in longest_first:
            if large is small or id(large) in absorbed or len(keys[id(large)]) <= len(keys[id(small)]):
                continue
            if keys[id(small)] and _contains_phrase(keys[id(large)], keys[id(small)]):
                large.rows.extend(small.rows)
                large.topics = _merged_topics([large.topics, small.topics])
                absorbed.add(id(small))
                break
    drafts = [draft for draft in drafts if id(draft) not in absorbed]

    # Union-find over shared topics.
    parent = list(range(len(drafts)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    first_with_topic: dict[str, int] = {}
    for index, draft in enumerate(drafts):
        for topic in draft.topics:
            key = topic.casefold()
            if key in first_with_topic:
                parent[root(index)] = root(first_with_topic[key])
            else:
                first_with_topic[key] = index
    groups: dict[int, list[_Draft]] = {}
    for index, draft in enumerate(drafts):
        groups.setdefault(root(index), []).append(draft)

    ordered_result: list[tuple[tuple[datetime, str], OptimizedMemory]] = []
    for members in groups.values():
        rows = sorted((row for draft in members for row in draft.rows), key=lambda r: (r.created_at, r.pk))
        keeper = rows[0]
        ordered = sorted(members, key=lambda d: min((r.created_at, r.pk) for r in d.rows))
        text = ordered[0].text if len(ordered) == 1 else " ".join(_sentence(d.text) for d in ordered)
        topics = _merged_topics(d.topics for d in ordered)
        changed = len(rows) > 1 or text != keeper.memory or topics != list(keeper.topics or [])
        merged = OptimizedMemory(
            memory_id=keeper.pk,
            memory=text,
            topics=topics,
            agent_id=_common(r.agent_id for r in rows),
            team_id=_common(r.team_id for r in rows),
            user_id=keeper.user_id,
            updated_at=now if changed else keeper.updated_at,
            merged_ids=tuple(r.pk for r in rows),
            changed=changed,
        )
        ordered_result.append(((keeper.created_at, keeper.pk), merged))
    ordered_result.sort(key=lambda item: item[0])
    return [merged for _, merged in ordered_result]


_SUMMARIZE_PROMPT = (
    "You maintain a list of facts about a user. Rewrite the facts below as ONE concise memory "
    "that keeps every fact and adds nothing. Reply with the memory text only."
)


# The model call belongs to the side that builds models (agents, which registers it in ready());
# sessions only says what to ask and what to do with the answer.
MemoryWriter = Callable[[str, list[dict[str, str]]], str]
_memory_writer: MemoryWriter | None = None


def memory_writer_register(writer: MemoryWriter) -> None:
    """Register ``writer(model_spec, messages) -> text``: it raises ``UnusableModel`` for a model
    string it cannot build and ``MemoryOptimizationError`` when the model call fails."""
    global _memory_writer
    _memory_writer = writer


def _model_summary(model_spec: str, plan: list[OptimizedMemory]) -> str | None:
    """All memories as one text written by ``model_spec``; None when the model's text is no gain.

    Raises ``UnusableModel`` for a model string we cannot build (or when no app registered a
    writer) and ``MemoryOptimizationError`` when the model call fails.
    """
    if _memory_writer is None:  # the engine is optional for this endpoint; the merge is not
        raise UnusableModel("Model-based memory optimization is not available on this server")
    facts = "\n".join(f"- {memory.memory}" for memory in plan)
    messages = [{"role": "system", "content": _SUMMARIZE_PROMPT}, {"role": "user", "content": facts}]
    text = " ".join(_memory_writer(model_spec, messages).split())
    # A reply longer than the facts themselves (an echo, a preamble) is not an optimization.
    if not text or memory_tokens(text) > sum(memory_tokens(memory.memory) for memory in plan):
        return None
    return text


def memory_optimize(*, user_id: str, apply: bool = True, model: str | None = None) -> MemoryOptimization | None:
    """Merge ``user_id``'s memories into fewer ones without losing facts; None if they have none.

    Without ``model`` the merge is deterministic (``memory_merge_plan``). With a model
    (``"provider:model_id"``) all memories become one text the model writes, as AgentOS's
    summarize strategy does; a reply that is empty or longer than the memories keeps the
    deterministic plan. ``apply=False`` only reports what would be written.
    """
    memories = memory_list_for_user(user_id=user_id)
    if not memories:
        return None
    now = timezone.now()
    plan = memory_merge_plan(memories, now=now)
    if model:
        summary = _model_summary(model, plan)
        if summary is not None:
            rows = memories
            plan = [
                OptimizedMemory(
                    memory_id=rows[0].pk,
                    memory=summary,
                    topics=_merged_topics(m.topics for m in plan),
                    agent_id=_common(r.agent_id for r in rows),
                    team_id=_common(r.team_id for r in rows),
                    user_id=user_id,
                    updated_at=now,
                    merged_ids=tuple(r.pk for r in rows),
                    changed=True,
                )
            ]
    if apply:
        _apply_plan(user_id=user_id, before=memories, plan=plan)
    return MemoryOptimization(
        memories=plan,
        memories_before=len(memories),
        memories_after=len(plan),
        tokens_before=sum(memory_tokens(row.memory) for row in memories),
        tokens_after=sum(memory_tokens(memory.memory) for memory in plan),
        applied=apply,
    )


def _apply_plan(*, user_id: str, before: list[UserMemory], plan: list[OptimizedMemory]) -> None:
    """Write the plan, unless the memories changed since they were read (then MemoriesChanged)."""
    seen = {row.pk: (row.memory, row.updated_at) for row in before}
    kept = {memory.memory_id for memory in plan}
    with transaction.atomic():
        current = {
            row.pk: (row.memory, row.updated_at)
            for row in UserMemory.objects.for_user(user_id).select_for_update().only("memory", "updated_at")
        }
        if current != seen:
            raise MemoriesChanged(user_id)
        for memory in plan:
            if not memory.changed:
                continue
            UserMemory.objects.for_user(user_id).filter(pk=memory.memory_id).update(
                memory=memory.memory,
                topics=memory.topics,
                topics_key=memory_topics_key(memory.topics),
                agent_id=memory.agent_id,
                team_id=memory.team_id,
                updated_at=memory.updated_at,
            )
        UserMemory.objects.for_user(user_id).filter(pk__in=[pk for pk in seen if pk not in kept]).delete()
