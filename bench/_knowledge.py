"""What the knowledge benches share: the shipped corpus, PDFs made from it, the ingestion driver,
word-piece counts, and a database that is created once and dropped at the end.

The corpus is bench/data/knowledge/: copies of the project's README.md and of the three Agno
documents in the spec's seeds (the v3 migration guide, the v3 changelog and the v2.6 admin
guide), so the benches do not depend on files outside the repository.
"""
from __future__ import annotations

import io
import json
import os
import platform
import subprocess
import textwrap
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data" / "knowledge"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
CORPUS = ("agno_site_readme.md", "agno_v3_migration.md", "agno_v3_changelog.md", "agno_admin_guide.md")


def corpus() -> list[tuple[str, bytes]]:
    return [(name, (DATA_DIR / name).read_bytes()) for name in CORPUS]


def job_settings() -> None:
    """Jobs run when the bench says (``ingest_all``), in its thread, with caps that let a whole
    corpus queue at once."""
    from django.conf import settings

    settings.EMBEDDED_WORKER = False
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 1000
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 1000
    settings.AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = 100000
    settings.AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER = 100000


def ingest_all(worker: str = "bench-worker") -> list[str]:
    """Run every queued job to its end, one after another, as a worker does: their statuses."""
    from jobs.services.claims import job_claim
    from jobs.services.jobs import job_run

    statuses = []
    while (job := job_claim(worker=worker, probe=False)) is not None:
        statuses.append(job_run(job, worker))
    return statuses


def pieces_of(name: str, data: bytes, *, size: int | None = None, overlap: int | None = None):
    """The chunks the ingestion job makes of a file (its reader and default chunker), without a
    database."""
    from django.conf import settings

    from knowledge.chunkers import chunk_sections
    from knowledge.readers import reader_for

    size = size or settings.KNOWLEDGE_CHUNK_SIZE
    overlap = overlap if overlap is not None else min(settings.KNOWLEDGE_CHUNK_OVERLAP, size // 2)
    reader = reader_for(file_name=name)
    return chunk_sections(reader.read(data), chunker=reader.chunker, size=size, overlap=overlap)


def word_pieces(texts: list[str]) -> list[int]:
    """How many word pieces all-MiniLM-L6-v2's tokenizer makes of each text, [CLS] and [SEP]
    included, without truncation (the model reads the first 256)."""
    from tokenizers import Tokenizer

    from knowledge.model_files import tokenizer_path

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]


def pdf_bytes(text: str, *, width: int = 95, lines_per_page: int = 50) -> tuple[bytes, int]:
    """A real PDF of ``text`` (Helvetica, wrapped lines, as many pages as it takes), written object
    by object with its xref table; and its page count."""
    lines: list[str] = []
    for paragraph in text.splitlines():
        lines += textwrap.wrap(paragraph, width) or [""]
    pages = [lines[i : i + lines_per_page] for i in range(0, len(lines), lines_per_page)] or [[""]]
    count = len(pages)
    page_ids = [4 + 2 * index for index in range(count)]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % pid for pid in page_ids) + b"] /Count %d >>" % count,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for index, page in enumerate(pages):
        body = []
        for line in page:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1", "replace")
            body.append(b"(" + escaped + b") Tj T*")
        stream = b"BT /F1 10 Tf 12 TL 50 750 Td " + b" ".join(body) + b" ET"
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_ids[index] + 1)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body_bytes in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body_bytes + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue(), count


def machine() -> dict:
    """Where a number was measured (the machine is shared: its load is part of the record)."""
    try:
        revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        revision = ""
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version(), "revision": revision}


def write_result(stem: str, result: dict) -> Path:
    import time

    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{stem}_{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")
