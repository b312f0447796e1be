"""Retrieval quality of the default embedder, BM25 and their fusion, on the project's own README.

``.venv/bin/python -m bench.knowledge_quality`` chunks README.md with the default chunker and
size (Markdown, 800 characters), embeds the chunks with the default embedder (all-MiniLM-L6-v2)
and asks 24 questions: 12 that share words with their passage ("lexical") and the same 12
asked in other words ("paraphrased"). A question is answered when one of the top 5 chunks holds
its passage's key sentence. Rankings are exact (every chunk scored): what the SQLite search does,
and the upper bound of the HNSW search on PostgreSQL. BM25 (k1=1.2, b=0.75, the common
defaults) is the lexical baseline; hybrid is reciprocal rank fusion of the vector and BM25
rankings with the given k and weights (``knowledge.services.search.fuse``).
"""
from __future__ import annotations

import math
import os
import re
import time
from collections import Counter
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parents[1]

# (lexical question, paraphrased question, a sentence of the passage that answers both)
QUESTIONS = [
    ("What does make run do: creates .venv, installs, migrates?", "How do I start the whole product locally with one command?",
     "creates .venv, installs, migrates"),
    ("Which Idempotency-Key header deduplicates background runs?", "How can a client avoid submitting the same job twice when it retries?",
     "an `Idempotency-Key` header"),
    ("What does session_strategy interrupt do to the running one?", "Can a new message stop the answer being generated in the same conversation?",
     "`interrupt` (cancels the running one)"),
    ("With JWT_JWKS_FILE, how are keys picked by kid?", "How do I verify tokens against my identity provider's published key set?",
     "keys are picked by `kid`"),
    ("What does the offline model do with /slow seconds?", "How can I simulate a model that answers very slowly, to test cancelling?",
     "streams its answer slowly"),
    ("What does the agno_run_events table hold?", "Where is each step of an execution kept so that a stream can be played back?",
     "a run's events in order"),
    ("When is UnscopedQueryError raised in tests?", "What happens when a developer forgets to restrict a database query to one person's rows?",
     "`UnscopedQueryError` in tests instead of leaking"),
    ("Does the admin dashboard show p50 and p95 run duration?", "Where can an operator see charts of latency percentiles and error rates?",
     "p50 and p95 run duration"),
    ("How does manage.py createuser alice --password-stdin work?", "How do I add an ordinary account without administrator rights from a terminal?",
     "createuser alice --password-stdin"),
    ("Who are the researcher and the writer of the Demo Team?", "Is there a sample group of assistants that collaborate to produce a text?",
     "a researcher and a writer"),
    ("What does security_key mode with OS_SECURITY_KEY give?", "What if I protect the server with a single static secret instead of signed tokens?",
     "one shared key with full access"),
    ("Do runs still complete with Redis down?", "If the message broker is unavailable, do accepted jobs still finish?",
     "with Redis down runs still complete"),
]
DEPTH = 20  # candidates per list fused (as the hybrid search takes: max(4 x limit, 20))
TOP = 5
_WORD = re.compile(r"\w+")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _tokens(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if len(word) > 1]


class BM25:
    def __init__(self, documents: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = [Counter(_tokens(doc)) for doc in documents]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.average = sum(self.lengths) / len(self.lengths)
        frequency = Counter(word for doc in self.docs for word in doc)
        count = len(self.docs)
        self.idf = {word: math.log(1 + (count - n + 0.5) / (n + 0.5)) for word, n in frequency.items()}
        self.k1, self.b = k1, b

    def ranked(self, query: str) -> list[int]:
        words = set(_tokens(query))
        scores = []
        for index, (doc, length) in enumerate(zip(self.docs, self.lengths)):
            score = sum(
                self.idf[word] * doc[word] * (self.k1 + 1) / (doc[word] + self.k1 * (1 - self.b + self.b * length / self.average))
                for word in words if word in doc
            )
            if score > 0:
                scores.append((score, index))
        return [index for _, index in sorted(scores, key=lambda item: (-item[0], item[1]))]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.test")
    django.setup()
    import numpy as np

    from knowledge.chunkers import chunk_sections
    from knowledge.embedders import embedder_get
    from knowledge.readers import Section
    from knowledge.services.search import fuse

    from django.conf import settings

    text = (ROOT / "README.md").read_text()
    pieces = chunk_sections([Section(text)], chunker="markdown", size=settings.KNOWLEDGE_CHUNK_SIZE, overlap=settings.KNOWLEDGE_CHUNK_OVERLAP)
    chunks = [piece.text for piece in pieces]
    flat = [_flat(chunk) for chunk in chunks]
    for _, _, needle in QUESTIONS:
        assert any(_flat(needle) in chunk for chunk in flat), f"no chunk holds {needle!r}"
    embedder = embedder_get("minilm")
    started = time.perf_counter()
    matrix = np.asarray(embedder.embed(chunks), dtype=np.float32)
    embed_seconds = time.perf_counter() - started
    bm25 = BM25(chunks)

    def vector_ranked(query: str) -> list[int]:
        scores = matrix @ np.asarray(embedder.embed([query])[0], dtype=np.float32)
        return [int(i) for i in np.argsort(-scores, kind="stable")]

    configs: list[tuple[str, object]] = [("BM25", None), ("vector", None)]
    for k in (1, 5, 10, 30, 60):
        for weight in (1.0, 0.5, 0.25):
            configs.append((f"hybrid k={k} w_bm25={weight}", (k, weight)))
    results: dict[str, dict[str, int]] = {name: {"lexical": 0, "paraphrased": 0} for name, _ in configs}
    for lexical, paraphrased, needle in QUESTIONS:
        for kind, question in (("lexical", lexical), ("paraphrased", paraphrased)):
            semantic, words = vector_ranked(question), bm25.ranked(question)
            for name, params in configs:
                if name == "BM25":
                    top = words[:TOP]
                elif name == "vector":
                    top = semantic[:TOP]
                else:
                    k, weight = params  # type: ignore[misc]
                    top = [i for i, _ in fuse([(semantic[:DEPTH], 1.0), (words[:DEPTH], weight)], k=k, limit=TOP)]
                results[name][kind] += any(_flat(needle) in flat[i] for i in top)
    total = len(QUESTIONS)
    print(f"{len(chunks)} chunks of README.md ({len(text):,} characters), embedded in {embed_seconds:.2f} s; {total} + {total} questions, hit@{TOP}")
    print("| ranking | lexical | paraphrased | all |\n|---|---|---|---|")
    for name, _ in configs:
        lexical, paraphrased = results[name]["lexical"], results[name]["paraphrased"]
        print(f"| {name} | {lexical}/{total} | {paraphrased}/{total} | {(lexical + paraphrased) / (2 * total):.2f} |")


if __name__ == "__main__":
    main()
