"""Tenant-filtered HNSW search at 100,000 chunks over 20 users, on PostgreSQL.

``.venv/bin/python -m bench.knowledge_search [--chunks 100000] [--queries 200]`` makes a fresh
database (``KNOWLEDGE_BENCH_DATABASE_URL``, default ``postgres://postgres@127.0.0.1:5432/
agno_knowledge_bench``, dropped and created anew), loads the chunks with the HNSW index dropped,
builds it (m=16, ef_construction=64, as migration 0002), and runs the search service's vector
ranking (``knowledge.services.search``: the owner filter in the same query as the HNSW scan,
iterative scans) for two users: one holding 1% of the chunks and one holding 30%. Recall@10 is
measured against exact search (every one of the user's vectors scored in numpy), latency is the
statement's (the query's embedding is not included: it is the embedder's cost, not the search's).

The vectors are low-rank (a 32-dimensional latent space projected to 384 dimensions, plus noise,
normalised), which is how sentence embeddings behave; uniformly random 384-d vectors are the
worst case of any graph index and not what users store.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from urllib.parse import urlsplit, urlunsplit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef-search", type=int, default=None, help="KNOWLEDGE_HNSW_EF_SEARCH for the searches")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards (for --reuse)")
    parser.add_argument("--reuse", action="store_true", help="search the database a --keep run left (no load, no build)")
    args = parser.parse_args()
    url = os.environ.get("KNOWLEDGE_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/agno_knowledge_bench")
    parts = urlsplit(url)
    import psycopg

    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    name = parts.path.lstrip("/")
    if not args.reuse:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.test")
    import django

    django.setup()
    import numpy as np
    from django.core.management import call_command
    from django.db import connection

    from knowledge.models import Chunk, Content, KnowledgeBase
    from knowledge.services.search import _candidates, _vector_ranked

    from django.conf import settings

    if args.ef_search:
        settings.KNOWLEDGE_HNSW_EF_SEARCH = args.ef_search
    if not args.reuse:
        call_command("migrate", verbosity=0)
    rng = np.random.default_rng(22)
    latent = rng.normal(size=(32, 384)).astype(np.float32)

    def vectors(count: int) -> np.ndarray:
        points = rng.normal(size=(count, 32)).astype(np.float32) @ latent + 0.3 * rng.normal(size=(count, 384)).astype(np.float32)
        return points / np.linalg.norm(points, axis=1, keepdims=True)

    total = args.chunks
    small, big = total // 100, total * 30 // 100
    others = (total - small - big) // 18
    owners = [("user-small", small), ("user-big", big)] + [(f"user-{n:02d}", others) for n in range(18)]
    data: dict[str, np.ndarray] = {}
    ids: dict[str, list[int]] = {}
    if args.reuse:  # the same seed makes the same vectors; the ids are read back in order
        base = KnowledgeBase.all_users.get(name="bench")
        for owner, count in owners:
            data[owner] = vectors(count)
            ids[owner] = list(Chunk.all_users.filter(user_id=owner).order_by("index").values_list("id", flat=True))
    else:
        base = KnowledgeBase.objects.create(user_id=None, name="bench", embedder_id="minilm")
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX knowledge_chunks_embedding_hnsw")
        started = time.perf_counter()
        for owner, count in owners:
            content = Content.objects.create(user_id=owner, base=base, source_type="text", status="completed")
            data[owner] = vectors(count)
            rows = Chunk.objects.bulk_create(
                [Chunk(user_id=owner, base=base, content=content, index=i, text=f"{owner} {i}", embedding=v, embedder_id="minilm") for i, v in enumerate(data[owner])],
                batch_size=2000,
            )
            ids[owner] = [row.pk for row in rows]
        load = time.perf_counter() - started
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute(
                "CREATE INDEX knowledge_chunks_embedding_hnsw ON knowledge_chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
            cursor.execute("ANALYZE knowledge_chunks")
        build = time.perf_counter() - started
        print(f"{sum(c for _, c in owners):,} chunks over {len(owners)} users: loaded in {load:.0f} s, HNSW built in {build:.0f} s")
    print(f"hnsw.ef_search {settings.KNOWLEDGE_HNSW_EF_SEARCH}, exact below {settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS:,} candidate chunks")
    print("| user | share | p50 | p95 | recall@10 | plan |\n|---|---|---|---|---|---|")
    from contextlib import nullcontext

    from django.db import transaction

    def forced_hnsw():
        """The planner kept off the owner's btree index (no sort allowed): the HNSW path itself."""
        block = transaction.atomic()
        block.__enter__()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
        return block

    for owner, force in (("user-small", False), ("user-small", True), ("user-big", False)):
        chunks = _candidates(user=owner, base=base, filters=None)
        queries = vectors(args.queries)
        timings, recalls = [], []
        exact_max = settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS
        if force:
            settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = 0
        block = forced_hnsw() if force else nullcontext()
        for query in queries:
            begin = time.perf_counter()
            got = [chunk_id for chunk_id, _ in _vector_ranked(chunks, query.tolist(), 10)]
            timings.append(time.perf_counter() - begin)
            exact = np.argsort(-(data[owner] @ query))[:10]
            expected = {ids[owner][i] for i in exact}
            recalls.append(len(expected & set(got)) / 10)
        if force:
            block.__exit__(None, None, None)
            settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = exact_max
            kind = "HNSW, iterative scan (forced: no exact path, no sorting)"
        else:
            exact = chunks.values("id")[: exact_max + 1].count() <= exact_max
            kind = "exact (the owner's rows, all scored)" if exact else "HNSW, iterative scan"
        timings.sort()
        p95 = timings[int(0.95 * (len(timings) - 1))]
        share = dict(owners)[owner] / total
        print(f"| {owner} | {share:.0%} | {statistics.median(timings) * 1000:.1f} ms | {p95 * 1000:.1f} ms | {statistics.mean(recalls):.3f} | {kind} |")
    from django.db import connections

    connections.close_all()
    if not args.keep:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


if __name__ == "__main__":
    main()
