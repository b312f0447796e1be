"""Vector search at 100,000 chunks over 20 users, on PostgreSQL: a user's top-10 latency, and the
recall of the tenant-filtered HNSW search against exact search.

    nice -n 10 .venv/bin/python -m bench.knowledge_search [--rows 100000] [--ef 40,100,200]
        [--m 16 --ef-construction 64] [--noise 0.025] [--reuse] [--keep]

The vectors. Embedding 100,000 distinct chunks with MiniLM costs many minutes of CPU on this
machine, so the set is built from real embeddings: every chunk of the shipped corpus
(bench/data/knowledge, at the default chunk size) and of Python's own reference documentation
(``pydoc_data.topics``, the text ``help()`` shows) is embedded with the default embedder; row i of
the table is real vector ``i mod R`` (in a shuffled order), plus ``u`` times another real vector
picked at random (``u`` uniform in [0, ``--mix``]), plus Gaussian noise of standard deviation
``--noise`` per dimension, normalised again, with the first real chunk's text. With the defaults
(0.6, 0.03) a row sits at cosine ~0.85 of its origin and its nearest neighbour at ~0.76 (the real
chunks' own nearest neighbour: 0.72). ``--mix 0 --noise 0.025`` is a harder set: each real vector's
~100 noisy copies form a tight cluster (siblings at cosine ~0.81) with few HNSW links between
clusters.
Queries are real: the quality bench's questions and the opening of held-out chunks (chunks none
of the table's rows is made from), embedded by the service itself.

The users. One shared base; user 00 holds 30% of the chunks, user 19 holds 1%, the 18 others split
the remaining 69% unevenly (from about 7% down to 1.3%). Rows are dealt to users at random, in
contents of about 50 chunks.

The table is loaded with COPY with the search indexes dropped, then the migration's indexes are
built again (HNSW with ``--m`` / ``--ef-construction``, and the GIN full-text index), then ANALYZE.

Measured for the 1% user, a median user and the 30% user, for each ``hnsw.ef_search``
(``KNOWLEDGE_HNSW_EF_SEARCH``):

- latency of ``knowledge_search(..., search_type="vector", limit=10)``, the service every surface
  calls (the query's embedding, the ranking, the hits' read), p50 / p95 over the queries, after a
  warm-up pass; and of the ranking statement alone (``_vector_ranked``, as the service runs it);
- recall@10 of the service's top-10 against exact search: the same scoped statement with
  ``enable_indexscan = off`` in a transaction (no HNSW: the filter, then every distance, sorted);
- the same recall with the planner forced onto the HNSW index (``enable_seqscan``,
  ``enable_bitmapscan`` and ``enable_sort`` off), the scan asked for the service's 40 rows: for a
  small user the planner may rightly prefer the owner's btree index and an exact sort, which says
  nothing about the index's recall; and forced, but stopped at the 10th row that passes the
  filter (the service before it over-fetched: with relaxed_order a row found late can be nearer).

The plan column is the EXPLAIN of the service's statement (``LIMIT 40``) for the first query.

Results: bench/results/knowledge_search_<time>.json and Markdown tables on stdout.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ._knowledge import DATA_DIR, corpus, machine, percentile, pieces_of, write_result

DB_NAME = os.environ.get("BENCH_DATABASE_NAME", "agno_h_kbench_search")
USERS = 20
BIG_SHARE, SMALL_SHARE = 0.30, 0.01
CONTENT_CHUNKS = 50
CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "agno_bench_knowledge_real_vectors.npz"


def shares(users: int = USERS) -> list[float]:
    """user 00: 30%, user 19: 1%, the others a decreasing split of the rest."""
    middle = users - 2
    weights = np.linspace(5.0, 1.0, middle)
    rest = (1.0 - BIG_SHARE - SMALL_SHARE) * weights / weights.sum()
    return [BIG_SHARE, *rest.tolist(), SMALL_SHARE]


def real_texts() -> list[str]:
    import pydoc_data.topics

    texts = [piece.text for name, data in corpus() for piece in pieces_of(name, data)]
    for key in sorted(pydoc_data.topics.topics):
        texts += [piece.text for piece in pieces_of(f"{key}.txt", pydoc_data.topics.topics[key].encode())]
    seen: set[str] = set()
    return [text for text in texts if not (text in seen or seen.add(text))]


def real_vectors(texts: list[str]) -> tuple[np.ndarray, float | None]:
    """The default embedder's vectors of ``texts`` (cached between runs), and the seconds it took."""
    from knowledge.embedders import embedder_get

    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    if CACHE.exists():
        cached = np.load(CACHE)
        if str(cached["key"]) == key:
            return cached["vectors"], None
    embedder = embedder_get("minilm")
    embedder.embed(["warm up"])
    started = time.perf_counter()
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    seconds = time.perf_counter() - started
    np.savez(CACHE, key=key, vectors=vectors)
    return vectors, seconds


def admin_url() -> str:
    return os.environ.get("BENCH_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def ensure_database(reuse: bool) -> tuple[str, bool]:
    """The bench's database URL, and whether it already holds a loaded table (``--reuse``)."""
    import psycopg

    with psycopg.connect(admin_url(), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone() is not None
        if exists and not reuse:
            conn.execute(f"DROP DATABASE {DB_NAME} WITH (FORCE)")
            exists = False
        if not exists:
            conn.execute(f"CREATE DATABASE {DB_NAME}")
    return f"postgres://postgres@127.0.0.1:5432/{DB_NAME}", exists


def drop_database() -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def load(args, real: np.ndarray, texts: list[str], table_ids: np.ndarray, rng: np.random.Generator) -> dict:
    """The base, contents and ``args.rows`` chunks; the indexes built afterwards. Timings."""
    from django.db import connection
    from django.utils import timezone

    from knowledge.models import Content, KnowledgeBase

    now = timezone.now()
    base = KnowledgeBase.objects.create(name="bench", embedder_id="minilm", dimensions=384, created_at=now, updated_at=now)
    counts = np.floor(np.asarray(shares(args.users)) * args.rows).astype(int)
    counts[1] += args.rows - counts.sum()
    owners = np.repeat(np.arange(args.users), counts)
    rng.shuffle(owners)
    order = rng.permutation(table_ids)  # which real vector each row copies
    contents: dict[int, list[str]] = {}
    rows_per_user = {user: int(count) for user, count in enumerate(counts)}
    content_rows = []
    for user, count in rows_per_user.items():
        ids = []
        for n in range(max(1, -(-count // CONTENT_CHUNKS))):
            content = Content(
                user_id=f"user-{user:02d}", base=base, name=f"user-{user:02d} document {n}", source_type="text", status="completed",
                embedder_id="minilm", created_at=now, updated_at=now,
            )
            content_rows.append(content)
            ids.append(content.pk)
        contents[user] = ids
    Content.objects.bulk_create(content_rows, batch_size=1000)
    timings = {}
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS knowledge_chunks_embedding_hnsw")
        cursor.execute("DROP INDEX IF EXISTS knowledge_chunks_text_search")
    started = time.perf_counter()
    seen = {user: 0 for user in rows_per_user}
    connection.ensure_connection()
    raw = connection.connection  # psycopg 3, in autocommit: COPY commits on its own
    with raw.cursor() as cursor:
        with cursor.copy(
            "COPY knowledge_chunks (user_id, base_id, content_id, index, text, metadata, embedding, embedder_id, dimensions, created_at) FROM STDIN"
        ) as copy:
            for start in range(0, args.rows, 5000):
                stop = min(args.rows, start + 5000)
                noisy = real[order[np.arange(start, stop) % len(order)]]
                if args.mix:  # a share of another real vector: rows between the real ones, not tight clusters
                    others = real[rng.integers(0, len(real), stop - start)]
                    noisy = noisy + rng.uniform(0.0, args.mix, size=(stop - start, 1)).astype(np.float32) * others
                noisy = noisy + rng.normal(0.0, args.noise, size=noisy.shape).astype(np.float32)
                noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
                for offset, vector in enumerate(noisy):
                    row = start + offset
                    user = int(owners[row])
                    index = seen[user]
                    seen[user] += 1
                    content_id = contents[user][index // CONTENT_CHUNKS]
                    text = texts[int(order[row % len(order)])]
                    copy.write_row((f"user-{user:02d}", base.pk, content_id, index, text, "{}", vector_literal(vector), "minilm", 384, now))
    timings["copy_s"] = round(time.perf_counter() - started, 1)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        started = time.perf_counter()
        cursor.execute(
            "CREATE INDEX knowledge_chunks_embedding_hnsw ON knowledge_chunks USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {int(args.m)}, ef_construction = {int(args.ef_construction)})"
        )
        timings["hnsw_build_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        cursor.execute("CREATE INDEX knowledge_chunks_text_search ON knowledge_chunks USING gin ((to_tsvector('english', text)))")
        timings["gin_build_s"] = round(time.perf_counter() - started, 1)
        cursor.execute("VACUUM ANALYZE knowledge_chunks")
    return timings


def index_settings() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'knowledge_chunks_embedding_hnsw'")
        options = cursor.fetchone()[0]
        cursor.execute("SELECT pg_size_pretty(pg_relation_size('knowledge_chunks_embedding_hnsw')), pg_size_pretty(pg_total_relation_size('knowledge_chunks'))")
        index_size, table_size = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM knowledge_chunks")
        rows = cursor.fetchone()[0]
        cursor.execute("SHOW shared_buffers")
        shared_buffers = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        pgvector = cursor.fetchone()[0]
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0].split(" on ")[0]
    return {"reloptions": options, "hnsw_index_size": index_size, "table_total_size": table_size, "rows": rows,
            "shared_buffers": shared_buffers, "pgvector": pgvector, "postgres": version}


def service_fetch() -> int:
    """The rows the service asks the HNSW scan for, for a top-10."""
    from knowledge.services.search import HNSW_FETCH_FACTOR, HNSW_MIN_FETCH

    return max(10 * HNSW_FETCH_FACTOR, HNSW_MIN_FETCH)


def statement(user: str, base_id: str, vector: list[float], n: int = 10):
    """The service's scoped ranking statement (``_candidates`` + ``ORDER BY distance LIMIT n``)."""
    from pgvector.django import CosineDistance

    from knowledge.models import KnowledgeBase
    from knowledge.services.search import _candidates

    base = KnowledgeBase.objects.unscoped("bench: the shared base").get(pk=base_id)
    return _candidates(user=user, base=base, filters={}).annotate(distance=CosineDistance("embedding", vector)).order_by("distance").values_list("id", "distance")[:n]


def ranked_ids(user: str, base_id: str, vector: list[float], *, settings_sql: list[str], ef: int, explain: bool = False, fetch: int = 10):
    """The statement's top 10 (of ``fetch`` rows asked for, re-sorted, as the service does), or
    its EXPLAIN ANALYZE."""
    from django.db import connection, transaction

    queryset = statement(user, base_id, vector, fetch)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true)", [str(ef)])
            for sql in settings_sql:
                cursor.execute(sql)
            if explain:
                sql, params = queryset.query.get_compiler(using="default").as_sql()
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                return [row[0] for row in cursor.fetchall()]
            rows = list(queryset)
    rows.sort(key=lambda row: (row[1], row[0]))
    return [chunk_id for chunk_id, _ in rows[:10]]


EXACT = ["SET LOCAL enable_indexscan = off"]
FORCE_HNSW = ["SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off", "SET LOCAL enable_sort = off"]


def plan_summary(lines: list[str]) -> str:
    nodes = []
    for line in lines:
        stripped = line.strip().lstrip("-> ").strip()
        for kind in ("Index Scan using knowledge_chunks_embedding_hnsw", "Bitmap Index Scan on chunk_user_base_embedder", "Index Scan using chunk_user_base_embedder",
                     "Seq Scan on knowledge_chunks", "Parallel Seq Scan on knowledge_chunks", "Sort", "Bitmap Heap Scan"):
            if stripped.startswith(kind) and kind not in nodes:
                nodes.append(kind)
    return " + ".join(nodes)


def backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def backend_cpu_s(pid: int) -> float:
    """CPU seconds of the server process serving this connection (the server is on this host)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def be_nice() -> None:
    """The database work of this bench runs in its connection's server process: nice it like this
    one (the machine is shared)."""
    import subprocess

    subprocess.run(["renice", "-n", str(os.nice(0)), "-p", str(backend_pid())], capture_output=True, check=False)


def measure(args, base_id: str, queries: list[str], query_vectors: np.ndarray, users: dict[str, str]) -> dict:
    from django.conf import settings

    from knowledge.services.search import _candidates, _vector_ranked, knowledge_search
    from knowledge.models import KnowledgeBase

    base = KnowledgeBase.objects.unscoped("bench: the shared base").get(pk=base_id)
    out: dict = {}
    for label, user in users.items():
        vectors = [v.tolist() for v in query_vectors]
        exact = [ranked_ids(user, base_id, v, settings_sql=EXACT, ef=100) for v in vectors]
        assert all(len(ids) == 10 for ids in exact)
        per_ef = {}
        for ef in args.ef:
            settings.KNOWLEDGE_HNSW_EF_SEARCH = ef
            for query in queries[:10]:  # warm-up
                knowledge_search(user=user, base_id=base_id, query=query, limit=10)
            service_ms, ranking_ms, recalls, forced, stopped, cpu_ms, db_cpu_ms = [], [], [], [], [], [], []
            pid = backend_pid()
            for query, vector, truth in zip(queries, vectors, exact):
                started, cpu, db_cpu = time.perf_counter(), time.process_time(), backend_cpu_s(pid)
                hits = knowledge_search(user=user, base_id=base_id, query=query, search_type="vector", limit=10)
                service_ms.append((time.perf_counter() - started) * 1000)
                cpu_ms.append((time.process_time() - cpu) * 1000)
                db_cpu_ms.append((backend_cpu_s(pid) - db_cpu) * 1000)
                assert all(hit.user_id == user for hit in hits)
                recalls.append(len({int(hit.chunk_id) for hit in hits} & set(truth)) / 10)
                chunks = _candidates(user=user, base=base, filters={})
                started = time.perf_counter()
                _vector_ranked(chunks, vector, 10)
                ranking_ms.append((time.perf_counter() - started) * 1000)
                forced_ids = ranked_ids(user, base_id, vector, settings_sql=FORCE_HNSW, ef=ef, fetch=service_fetch())
                forced.append(len(set(forced_ids) & set(truth)) / 10)
                stopped_ids = ranked_ids(user, base_id, vector, settings_sql=FORCE_HNSW, ef=ef, fetch=10)
                stopped.append(len(set(stopped_ids) & set(truth)) / 10)
            plan = ranked_ids(user, base_id, vectors[0], settings_sql=[], ef=ef, explain=True, fetch=service_fetch())
            forced_plan = ranked_ids(user, base_id, vectors[0], settings_sql=FORCE_HNSW, ef=ef, explain=True, fetch=service_fetch())
            per_ef[ef] = {
                "service_p50_ms": round(percentile(service_ms, 50), 2), "service_p95_ms": round(percentile(service_ms, 95), 2),
                "ranking_p50_ms": round(percentile(ranking_ms, 50), 2), "ranking_p95_ms": round(percentile(ranking_ms, 95), 2),
                "service_cpu_ms_mean": round(float(np.mean(cpu_ms)), 2), "database_cpu_ms_mean": round(float(np.mean(db_cpu_ms)), 2),
                "recall_at_10": round(float(np.mean(recalls)), 4), "recall_min": round(float(np.min(recalls)), 2),
                "hnsw_forced_recall_at_10": round(float(np.mean(forced)), 4), "hnsw_forced_recall_min": round(float(np.min(forced)), 2),
                "hnsw_forced_stopped_at_10_recall_at_10": round(float(np.mean(stopped)), 4),
                "plan": plan_summary(plan), "hnsw_forced_plan": plan_summary(forced_plan),
                "plan_text": plan, "hnsw_forced_plan_text": forced_plan,
            }
            print(label, user, ef, {k: v for k, v in per_ef[ef].items() if not k.endswith("_text")}, flush=True)
        out[label] = {"user": user, "by_ef_search": per_ef}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=USERS)
    parser.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values (KNOWLEDGE_HNSW_EF_SEARCH)")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--mix", type=float, default=0.6, help="each row adds U(0, mix) times another real vector (0: copies plus noise only)")
    parser.add_argument("--held-out", type=int, default=40)
    parser.add_argument("--reuse", action="store_true", help="keep a table loaded by an earlier --keep run")
    parser.add_argument("--keep", action="store_true", help="do not drop the database at the end")
    args = parser.parse_args()
    args.ef = [int(x) for x in args.ef.split(",")]

    url, loaded = ensure_database(args.reuse)
    from ._django import setup

    setup(url)
    be_nice()
    rng = np.random.default_rng(22)
    texts = real_texts()
    real, embed_s = real_vectors(texts)
    permutation = rng.permutation(len(texts))
    held_out, table_ids = permutation[: args.held_out], permutation[args.held_out :]
    questions = [q["question"] for q in json.loads((DATA_DIR / "questions.json").read_text())["questions"]] if (DATA_DIR / "questions.json").exists() else []
    queries = questions + [texts[i][:200] for i in held_out]
    from knowledge.embedders import embedder_get

    query_vectors = np.asarray(embedder_get("minilm").embed(queries), dtype=np.float32)
    from knowledge.models import KnowledgeBase

    base = KnowledgeBase.objects.unscoped("bench").filter(name="bench").first() if loaded else None
    timings = {}
    if base is None:
        timings = load(args, real, texts, table_ids, rng)
        base = KnowledgeBase.objects.unscoped("bench").get(name="bench")
    index = index_settings()
    print("loaded", timings, index, flush=True)
    counts = np.floor(np.asarray(shares(args.users)) * args.rows).astype(int)
    median_user = int(np.argsort(counts)[len(counts) // 2])
    users = {"1% user": f"user-{args.users - 1:02d}", f"median user ({counts[median_user] / args.rows:.1%})": f"user-{median_user:02d}", "30% user": "user-00"}
    results = measure(args, base.pk, queries, query_vectors, users)
    result = {
        "bench": "knowledge_search", "machine": machine(), "rows": args.rows, "users": args.users, "shares": [round(s, 4) for s in shares(args.users)],
        "real_vectors": len(texts), "real_embedding_s": embed_s, "noise_sd": args.noise, "mix": args.mix, "queries": len(queries), "questions": len(questions),
        "held_out_chunk_queries": len(held_out), "m": args.m, "ef_construction": args.ef_construction, "timings": timings, "index": index,
        "results": results,
    }
    path = write_result("knowledge_search", result)
    print(f"\n{args.rows:,} chunks, {args.users} users, {len(texts)} real vectors, + U(0, {args.mix}) x another + noise sd {args.noise}; HNSW m={args.m}, "
          f"ef_construction={args.ef_construction} ({index['reloptions']}); {len(queries)} queries\n")
    print("| user | ef_search | service p50 / p95 | ranking p50 / p95 | CPU per search (ours + database) | recall@10 (as planned) | plan | recall@10 (HNSW forced) | HNSW forced, stopped at 10 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, data in results.items():
        for ef, row in data["by_ef_search"].items():
            print(f"| {label} | {ef} | {row['service_p50_ms']:.1f} / {row['service_p95_ms']:.1f} ms | {row['ranking_p50_ms']:.1f} / {row['ranking_p95_ms']:.1f} ms "
                  f"| {row['service_cpu_ms_mean']:.1f} + {row['database_cpu_ms_mean']:.1f} ms "
                  f"| {row['recall_at_10']:.3f} | {row['plan']} | {row['hnsw_forced_recall_at_10']:.3f} | {row['hnsw_forced_stopped_at_10_recall_at_10']:.3f} |")
    print(f"\n{path}")
    if not args.keep:
        drop_database()


if __name__ == "__main__":
    sys.exit(main())
