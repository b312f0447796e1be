"""Ingestion throughput of the default embedder (all-MiniLM-L6-v2 int8 through fastembed): chunks
per second for the embedding alone, end to end through the ingestion job on PostgreSQL, and for
a PDF corpus end to end.

    nice -n 10 .venv/bin/python -m bench.knowledge_ingest [--db postgres|sqlite] [--pdf-copies 2]

1. **Embedding alone**: every chunk of the shipped corpus (bench/data/knowledge, the default
   reader, chunker and size), embedded in the ingestion job's batches (``EMBED_BATCH``), after the
   model is loaded (its load time is reported apart).
2. **End to end, Markdown**: each corpus file ``content_insert``-ed as an upload into a shared
   base, then the ingestion jobs run one after another as one worker runs them (claim, read,
   chunk, embed, the fenced write of the chunks and the completed status): from the first insert
   to the last job's end.
3. **End to end, PDF**: the same documents as real PDFs (Helvetica text, wrapped lines, 50 lines a
   page; made here, read back by pypdf), ``--pdf-copies`` times each (a header line makes every
   copy's bytes, and so its first chunk, different: no duplicate is skipped), uploaded as
   ``application/pdf`` and ingested the same way. The PDF reading alone (pypdf) is timed too.

Each row gives the wall time and our process's CPU time (all threads, the ONNX runtime's
included): the machine is shared, so chunks per CPU-second is the steadier number. Results:
bench/results/knowledge_ingest_<db>_<time>.json and a Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import sys
import time

from ._django import bench_database, setup
from ._knowledge import corpus, ingest_all, job_settings, machine, pdf_bytes, pieces_of, write_result


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def row(label: str, chunks: int, wall: float, cpu: float, **extra) -> dict:
    return {"what": label, "chunks": chunks, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "chunks_per_s": round(chunks / wall, 1), "chunks_per_cpu_s": round(chunks / cpu, 1), **extra}


def run(args) -> list[dict]:
    from knowledge.embedders import embedder_get
    from knowledge.models import Chunk, Content
    from knowledge.readers import reader_for
    from knowledge.services import base_get_or_create, content_insert
    from knowledge.services.ingestion import EMBED_BATCH

    rows = []
    job_settings()
    embedder = embedder_get("minilm")
    _, load_wall, load_cpu = timed(lambda: embedder.embed(["load the model"]))
    texts = [piece.text for name, data in corpus() for piece in pieces_of(name, data)]

    def embed_all():
        for start in range(0, len(texts), EMBED_BATCH):
            embedder.embed(texts[start : start + EMBED_BATCH])

    _, wall, cpu = timed(embed_all)
    rows.append(row("embedding alone (MiniLM int8, batches of %d)" % EMBED_BATCH, len(texts), wall, cpu,
                    model_load_s=round(load_wall, 2), mean_chars=round(sum(map(len, texts)) / len(texts))))

    def ingest(base_name: str, files: list[tuple[str, bytes, str]]) -> tuple[int, list[str]]:
        base = base_get_or_create(name=base_name)
        for name, data, mime in files:
            inserted = content_insert(user_id=None, base_id=base.pk, source_type="upload", data=data, file_name=name, mime_type=mime)
            assert not inserted.duplicate
        statuses = ingest_all()
        failed = list(Content.objects.unscoped("bench").filter(base_id=base.pk).exclude(status="completed").values_list("name", "status_message"))
        assert not failed, failed
        return Chunk.objects.unscoped("bench").filter(base_id=base.pk).count(), statuses

    markdown = [(name, data, "text/markdown") for name, data in corpus()]
    (chunks, statuses), wall, cpu = timed(lambda: ingest("markdown", markdown))
    rows.append(row(f"end to end, Markdown ({len(markdown)} files, {sum(len(d) for _, d, _ in markdown) / 1e3:.0f} kB)", chunks, wall, cpu, jobs=len(statuses)))

    pdfs, pages = [], 0
    for copy in range(args.pdf_copies):
        for name, data in corpus():
            pdf, count = pdf_bytes(f"Copy {copy + 1} of {name}\n" + data.decode())
            pdfs.append((f"{name.rsplit('.', 1)[0]}-{copy + 1}.pdf", pdf, "application/pdf"))
            pages += count
    reader = reader_for(mime_type="application/pdf")
    _, read_wall, read_cpu = timed(lambda: [reader.read(pdf) for _, pdf, _ in pdfs])
    (chunks, statuses), wall, cpu = timed(lambda: ingest("pdf", pdfs))
    megabytes = sum(len(p) for _, p, _ in pdfs) / 1e6
    rows.append(row(
        f"end to end, PDF ({len(pdfs)} files, {pages} pages, {megabytes:.1f} MB)", chunks, wall, cpu, jobs=len(statuses),
        pages=pages, pages_per_s=round(pages / wall, 1), pypdf_read_s=round(read_wall, 2), pypdf_pages_per_s=round(pages / read_wall, 1),
    ))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--pdf-copies", type=int, default=2)
    args = parser.parse_args()
    with bench_database(args.db, name="agno_h_kbench_ingest") as url:
        setup(url)
        rows = run(args)
    result = {"bench": "knowledge_ingest", "db": args.db, "machine": machine(), "rows": rows}
    path = write_result(f"knowledge_ingest_{args.db}", result)
    print(f"\n{args.db}; load average at the end {result['machine']['load_average']}\n")
    print("| what | chunks | wall | chunks/s | CPU | chunks per CPU-second |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['chunks']} | {r['wall_s']:.1f} s | {r['chunks_per_s']:.1f} | {r['cpu_s']:.1f} s | {r['chunks_per_cpu_s']:.1f} |")
    for r in rows:
        extra = {k: v for k, v in r.items() if k not in {"what", "chunks", "wall_s", "cpu_s", "chunks_per_s", "chunks_per_cpu_s"}}
        if extra:
            print(f"- {r['what']}: {extra}")
    print(f"\n{path}")


if __name__ == "__main__":
    sys.exit(main())
