"""Searching the text of a user's conversations: what they asked (a run's input) and what the agent
answered (its content), besides the names.

On PostgreSQL it is a full-text search over a GIN expression index (migration 0003, whose
expression is ``PG_DOCUMENT`` character for character, so the planner uses it): every word of
the query must start a word of the run's text (``pyth`` finds "Python"). On other databases
(SQLite) every word must occur in the input or the content, case-insensitively (a LIKE per
word; SQLite holds one process's data, where a user's runs are read by their ``user_id`` index).
"""
from __future__ import annotations

import re

from django.db import connections
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTextTransform

from .models import RunStatus

MAX_WORDS = 8
MAX_WORD_CHARS = 64
_WORD = re.compile(r"\w+")

# The document a run is searched by. A tsvector holds at most 1 MiB, so its source is bounded:
# a huge run must never fail its INSERT on the index. Keep in step with migration 0003.
PG_DOCUMENT = "to_tsvector('simple', left(coalesce(input ->> 'input_content', ''), 50000) || ' ' || left(content, 50000))"
PG_INDEX = "agno_runs_search"


def search_words(text: str) -> list[str]:
    """The words of a search, lower-cased, each once, at most ``MAX_WORDS`` of them."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word[:MAX_WORD_CHARS]
        if word not in words:
            words.append(word)
    return words[:MAX_WORDS]


def runs_matching(runs: QuerySet, words: list[str]) -> QuerySet:
    """The runs of ``runs`` (a scoped queryset) whose input or content holds every word.

    A regenerated answer is not shown in the conversation any more, so it does not make one match.
    """
    runs = runs.exclude(status=RunStatus.REGENERATED)
    if connections[runs.db].vendor == "postgresql":
        # Words are \w+ only, so the query cannot be malformed; each matches as a prefix.
        query = " & ".join(f"{word}:*" for word in words)
        return runs.filter(RawSQL(f"{PG_DOCUMENT} @@ to_tsquery('simple', %s)", [query], output_field=BooleanField()))
    runs = runs.annotate(_input_text=KeyTextTransform("input_content", "input"))
    for word in words:
        runs = runs.filter(Q(content__icontains=word) | Q(_input_text__icontains=word))
    return runs


def session_search_condition(*, runs: QuerySet, text: str) -> Q | None:
    """Sessions whose name contains ``text``, or with a run whose text holds all its words."""
    text = text.strip()
    if not text:
        return None
    condition = Q(session_name__icontains=text)
    words = search_words(text)
    if words:
        condition |= Q(pk__in=runs_matching(runs, words).values("session_id"))
    return condition
