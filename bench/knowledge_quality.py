"""Retrieval quality on the shipped corpus: hit@5 of BM25, the default embedder's vector search,
keyword search and hybrid fusion at several weights, for questions that share words with their
passage and for paraphrased ones; and whether the chunks fit the embedder's window.

    nice -n 10 .venv/bin/python -m bench.knowledge_quality [--db postgres|sqlite] [--chunk-size 800]

The corpus is bench/data/knowledge (the project's README and the three Agno documents of the
spec's seeds), ingested through the real path: ``content_insert`` of each file as an upload into
one shared base, then the ingestion job (reader, the default chunker and size, MiniLM, the
chunk table and its search indexes). The questions are bench/data/knowledge/questions.json,
written by hand: ``lexical`` ones reuse the words of their passage, ``paraphrase`` ones say the
same in other words. A question's gold passage is named by document, heading and a phrase; a
retrieved chunk is a hit when it comes from that document and holds the phrase (whitespace
normalised). An anchor that no chunk holds whole (split by the chunker) is reported and its
question left out.

Methods, each asked for its top 5:
- ``bm25``: rank-bm25's BM25Okapi (k1=1.5, b=0.75) over the same chunks, lower-cased word
  tokens without English stop words: the lexical baseline.
- ``vector``: ``knowledge_search(search_type="vector")`` (the default search type).
- ``keyword``: ``knowledge_search(search_type="keyword")`` (PostgreSQL full text, or SQLite FTS5).
- ``hybrid``: ``knowledge_search(search_type="hybrid")`` with the defaults, and a sweep of
  reciprocal rank fusion's ``k`` and the keyword weight (vector weight 1) over the same two
  rankings the service fuses (the service's ``_vector_ranked`` / ``_keyword_ranked`` at its
  hybrid depth, then its ``fuse``; checked equal to the service's own answer at the defaults).
- with ``--reranker remote:<model>|fastembed:<model>``: the default hybrid search reranked
  (``KNOWLEDGE_RERANK_CANDIDATES`` fused candidates); questions whose reranker failed (and so fell
  back to the hybrid order) are listed in ``rerank_failed``.

Results: bench/results/knowledge_quality_<db>_<time>.json and Markdown tables on stdout.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time

import numpy as np

from ._django import bench_database, setup
from ._knowledge import DATA_DIR, corpus, ingest_all, job_settings, machine, pieces_of, word_pieces, write_result

TOP = 5
RRF_KS = (0, 1, 5, 10, 20, 60)
KEYWORD_WEIGHTS = (0.25, 0.5, 0.75, 1.0)
_WORD = re.compile(r"\w+")
# A common English stop-word list (the classic SMART/Lucene core), so BM25 is not ranked on "the".
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both but by can
could did do does doing down during each few for from further had has have having he her here hers herself him himself his
how i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves
out over own same she should so some such than that the their theirs them themselves then there these they this those through
to too under until up very was we were what when where which while who whom why will with would you your yours yourself
yourselves
""".split())


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def tokens(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in STOP_WORDS]


def is_hit(chunk: dict, gold: list[dict]) -> bool:
    return any(chunk["doc"] == anchor["doc"] and normalise(anchor["phrase"]) in chunk["norm"] for anchor in gold)


def first_hit(ranked_ids: list[int], chunks: dict[int, dict], gold: list[dict]) -> int | None:
    """The 1-based rank of the first hit in the top ``TOP``, or None."""
    for rank, chunk_id in enumerate(ranked_ids[:TOP], start=1):
        if is_hit(chunks[chunk_id], gold):
            return rank
    return None


def summary(ranks: list[int | None]) -> dict:
    return {
        "hit_at_5": round(sum(r is not None for r in ranks) / len(ranks), 3),
        "hit_at_1": round(sum(r == 1 for r in ranks) / len(ranks), 3),
        "mrr_at_5": round(float(np.mean([1.0 / r if r else 0.0 for r in ranks])), 3),
    }


def window_check(sizes: tuple[int, ...] = (400, 800, 1000, 1200, 1500)) -> dict:
    """Word pieces per chunk of the corpus at several chunk sizes (default overlap rule)."""
    out = {}
    for size in sizes:
        texts = [piece.text for name, data in corpus() for piece in pieces_of(name, data, size=size)]
        counts = word_pieces(texts)
        out[size] = {
            "chunks": len(texts), "max_chars": max(len(t) for t in texts), "max_word_pieces": max(counts),
            "p95_word_pieces": int(np.percentile(counts, 95)), "over_256": sum(c > 256 for c in counts),
        }
    return out


def run(args) -> dict:
    from django.conf import settings

    from knowledge.models import Chunk, Content
    from knowledge.services import base_get_or_create, content_insert, knowledge_search
    from knowledge.services.search import RRF_K, VECTOR_WEIGHT, KEYWORD_WEIGHT, _candidates, _keyword_ranked, _vector_ranked, fuse
    from knowledge.embedders import embedder_get

    job_settings()
    if args.chunk_size:
        settings.KNOWLEDGE_CHUNK_SIZE = args.chunk_size
    base = base_get_or_create(name="quality", description="the shipped corpus")
    started = time.perf_counter()
    for name, data in corpus():
        content_insert(user_id=None, base_id=base.pk, source_type="upload", data=data, file_name=name, mime_type="text/markdown")
    statuses = ingest_all()
    ingest_s = time.perf_counter() - started
    failed = list(Content.objects.unscoped("bench").exclude(status="completed").values_list("name", "status_message"))
    assert not failed, failed
    names = dict(Content.objects.unscoped("bench").values_list("id", "file_name"))
    chunks = {
        row["id"]: {"doc": names[row["content_id"]], "text": row["text"], "norm": normalise(row["text"])}
        for row in Chunk.objects.unscoped("bench").filter(base_id=base.pk).values("id", "content_id", "text")
    }
    counts = word_pieces([c["text"] for c in chunks.values()])
    questions = json.loads((DATA_DIR / "questions.json").read_text())["questions"]
    unanswerable = [q["id"] for q in questions if not any(is_hit(c, q["gold"]) for c in chunks.values())]
    questions = [q for q in questions if q["id"] not in unanswerable]

    from rank_bm25 import BM25Okapi

    ids = list(chunks)
    bm25 = BM25Okapi([tokens(chunks[i]["text"]) for i in ids])
    embedder = embedder_get(base.embedder_id)
    candidates = _candidates(user=None, base=base, filters={})
    depth = max(TOP * 4, 20)  # the service's hybrid depth for limit=5
    ranks: dict[str, dict[str, list]] = {}

    def record(method: str, kind: str, rank: int | None) -> None:
        ranks.setdefault(method, {}).setdefault(kind, []).append(rank)

    default_label = f"hybrid k={RRF_K:g} w_kw={KEYWORD_WEIGHT:g} (default)"
    mismatches: list[str] = []
    rerank_failures: list[str] = []
    for q in questions:
        kind, gold, query = q["kind"], q["gold"], q["question"]
        scores = bm25.get_scores(tokens(query))
        record("bm25", kind, first_hit([ids[i] for i in np.argsort(-scores, kind="stable")[:TOP]], chunks, gold))
        for search_type in ("vector", "keyword", "hybrid"):
            hits = knowledge_search(user=None, base_id=base.pk, query=query, search_type=search_type, limit=TOP)
            label = default_label if search_type == "hybrid" else search_type
            record(label, kind, first_hit([int(h.chunk_id) for h in hits], chunks, gold))
            if search_type == "hybrid":
                service_hybrid = [int(h.chunk_id) for h in hits]
        if args.reranker:
            # The default search, its fused candidates reranked (a reranker that fails falls back,
            # so a failure would show as the hybrid row's numbers: count them).
            hits = knowledge_search(user=None, base_id=base.pk, query=query, search_type="hybrid", limit=TOP, reranker=args.reranker)
            if any(h.reranking_score is None for h in hits):
                rerank_failures.append(q["id"])
            record(f"hybrid + {args.reranker} ({settings.KNOWLEDGE_RERANK_CANDIDATES} candidates)", kind, first_hit([int(h.chunk_id) for h in hits], chunks, gold))
        vector = embedder.embed([query])[0]
        vector_ids = [i for i, _ in _vector_ranked(candidates, vector, depth)]
        keyword_ids = [i for i, _ in _keyword_ranked(candidates, query, depth)]
        fused_default = [i for i, _ in fuse([(vector_ids, VECTOR_WEIGHT), (keyword_ids, KEYWORD_WEIGHT)], k=RRF_K, limit=TOP)]
        if fused_default != service_hybrid:
            mismatches.append(q["id"])
        for k in RRF_KS:
            for weight in KEYWORD_WEIGHTS:
                fused = [i for i, _ in fuse([(vector_ids, 1.0), (keyword_ids, weight)], k=k, limit=TOP)]
                record(f"hybrid k={k:g} w_kw={weight:g}", kind, first_hit(fused, chunks, gold))
    table = {
        method: {kind: {"questions": len(values), **summary(values)} for kind, values in by_kind.items()}
        for method, by_kind in ranks.items()
    }
    for method, by_kind in table.items():
        every = [r for values in ranks[method].values() for r in values]
        by_kind["all"] = {"questions": len(every), **summary(every)}
    return {
        "chunks": len(chunks), "chunk_size": settings.KNOWLEDGE_CHUNK_SIZE, "chunk_overlap": settings.KNOWLEDGE_CHUNK_OVERLAP,
        "ingest_s": round(ingest_s, 1), "job_statuses": statuses,
        "word_pieces": {"max": max(counts), "p95": int(np.percentile(counts, 95)), "over_256": sum(c > 256 for c in counts)},
        "questions": {kind: sum(q["kind"] == kind for q in questions) for kind in ("lexical", "paraphrase")},
        "unanswerable_anchors": unanswerable, "hybrid_sweep_differs_from_service_at_defaults": mismatches,
        "reranker": args.reranker, "rerank_failed": rerank_failures,
        "defaults": {"rrf_k": RRF_K, "vector_weight": VECTOR_WEIGHT, "keyword_weight": KEYWORD_WEIGHT},
        "methods": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--chunk-size", type=int, default=None, help="KNOWLEDGE_CHUNK_SIZE for this run (default: the setting)")
    parser.add_argument("--reranker", default=None, help="also measure hybrid search reranked by this reranker (remote:<model>, fastembed:<model>)")
    parser.add_argument("--no-window", action="store_true", help="skip the chunk-size / word-piece table")
    args = parser.parse_args()
    with bench_database(args.db, name="agno_h_kbench_quality") as url:
        setup(url)
        result = {"bench": "knowledge_quality", "db": args.db, "machine": machine(), **run(args)}
    if not args.no_window:
        result["window_by_chunk_size"] = window_check()
    path = write_result(f"knowledge_quality_{args.db}", result)
    print(f"\n{result['chunks']} chunks (size {result['chunk_size']}, overlap {result['chunk_overlap']}); questions {result['questions']}; "
          f"left out (anchor split): {result['unanswerable_anchors']}; word pieces per chunk: {result['word_pieces']}\n")
    print("| method | lexical hit@5 | paraphrased hit@5 | all hit@5 | all MRR@5 |")
    print("|---|---|---|---|---|")
    methods = result["methods"]
    main_rows = [m for m in methods if not m.startswith("hybrid k=") or m.endswith("(default)")]
    sweep = sorted((m for m in methods if m not in main_rows), key=lambda m: (-methods[m]["all"]["hit_at_5"], -methods[m]["all"]["mrr_at_5"]))
    for method in main_rows + sweep:
        row = methods[method]
        print(f"| {method} | {row['lexical']['hit_at_5']:.3f} | {row['paraphrase']['hit_at_5']:.3f} | {row['all']['hit_at_5']:.3f} | {row['all']['mrr_at_5']:.3f} |")
    if "window_by_chunk_size" in result:
        print("\n| chunk size | chunks | longest chunk (chars) | word pieces max / p95 | chunks over 256 |")
        print("|---|---|---|---|---|")
        for size, row in result["window_by_chunk_size"].items():
            print(f"| {size} | {row['chunks']} | {row['max_chars']} | {row['max_word_pieces']} / {row['p95_word_pieces']} | {row['over_256']} |")
    print(f"\n{path}")


if __name__ == "__main__":
    sys.exit(main())
