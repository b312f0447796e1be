"""Knowledge: the embedder, ingestion bounds, chunking, search and reranking."""
from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from . import envtools as env
from .environment import VAR_DIR

# --- Knowledge ----------------------------------------------------------------------------------
# The embedder new knowledge bases use: "minilm" (all-MiniLM-L6-v2, int8 ONNX, from PyPI packages:
# offline), "openai:<model>" (an OpenAI-compatible /embeddings endpoint: EMBEDDINGS_BASE_URL, else
# OPENAI_BASE_URL) or "fastembed:<model>" (any fastembed model; downloaded on first use).
KNOWLEDGE_EMBEDDER = env.string("KNOWLEDGE_EMBEDDER", "minilm")
# Where the packaged model's files are assembled for fastembed (links, plus two small JSON files).
KNOWLEDGE_MODEL_DIR = Path(env.string("KNOWLEDGE_MODEL_DIR", str(VAR_DIR / "models")))
# Largest content accepted (upload, text, fetched URL), in bytes.
KNOWLEDGE_MAX_CONTENT_BYTES = env.integer("KNOWLEDGE_MAX_CONTENT_BYTES", 20 * 1024 * 1024, minimum=1)
# What reading one content may cost, whatever its size on the wire (a 13 KB DOCX can inflate to
# 5 MB of text): the members of a document archive (a DOCX), inflated, all together, and each
# compressed PDF stream (pypdf's own limits, lowered to this when they are higher); the text
# extracted, in characters (1,000,000: a 500-page book); and the chunks one content is split
# into (2,500: the default chunk size makes 2,000 of that much text; embedding 10,000 took half an
# hour of one core).
KNOWLEDGE_MAX_UNPACKED_BYTES = env.integer("KNOWLEDGE_MAX_UNPACKED_BYTES", 32 * 1024 * 1024, minimum=1)
KNOWLEDGE_MAX_TEXT_CHARS = env.integer("KNOWLEDGE_MAX_TEXT_CHARS", 1_000_000, minimum=1)
KNOWLEDGE_MAX_CHUNKS = env.integer("KNOWLEDGE_MAX_CHUNKS", 2_500, minimum=1)
# Wall-clock limit for fetching a URL (redirects and body included), seconds.
KNOWLEDGE_URL_TIMEOUT_SECONDS = env.integer("KNOWLEDGE_URL_TIMEOUT_SECONDS", 20, minimum=1)
# Default chunk size and overlap in characters: all-MiniLM-L6-v2 reads 256 word pieces and cuts
# the rest silently. That is about 1,000 characters of plain English, but technical text (code,
# identifiers, URLs) makes a piece of every 2.5 characters: at 800, 22 of the 294 chunks of the
# shipped corpus were longer than the window (bench/knowledge_quality.py); at 600 the longest is
# 245 pieces, and retrieval is as good.
KNOWLEDGE_CHUNK_SIZE = env.integer("KNOWLEDGE_CHUNK_SIZE", 600, minimum=50)
KNOWLEDGE_CHUNK_OVERLAP = env.integer("KNOWLEDGE_CHUNK_OVERLAP", 100, minimum=0)
# HNSW's candidate list per search (pgvector's hnsw.ef_search); iterative scans extend it while
# a user's filter leaves fewer than the limit. 400: at 100,000 chunks over 20 users the recall@10
# of a user holding 30% of them is 0.91 at 100 and 0.97 at 400, for ~0.5 ms more per search
# (bench/knowledge_search.py).
KNOWLEDGE_HNSW_EF_SEARCH = env.integer("KNOWLEDGE_HNSW_EF_SEARCH", 400, minimum=1, maximum=1000)
# A user whose candidate chunks (own and shared, in the base) are at most this many is searched
# exactly on PostgreSQL (their rows by the owner's index, all scored): exact, and faster than the
# graph when they hold a small share of a large table. 0: always the HNSW index.
KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = env.integer("KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS", 10000, minimum=0)
# The shared base the /knowledge API and the chat's "My documents" use when a request names none
# (created on first use). A user's uploads into it are theirs; searches see theirs and the shared.
KNOWLEDGE_DEFAULT_BASE = env.string("KNOWLEDGE_DEFAULT_BASE", "documents")
# Server folders offered as remote content sources (GET /knowledge/{id}/sources), as
# "id=/path" pairs separated by ";" (e.g. "handbook=/srv/handbook;specs=/srv/specs"). A file is
# ingested by POST /knowledge/remote-content with config_id=<id> and its path in the folder.
KNOWLEDGE_SOURCES = env.string("KNOWLEDGE_SOURCES", "")
# Reranking (knowledge/rerankers.py): off when empty; "remote:<model>" posts the candidates to
# KNOWLEDGE_RERANKER_URL (an endpoint of the common /rerank API: Cohere, Jina, Infinity, vLLM),
# "fastembed:<model>" runs a cross-encoder locally (downloaded on first use; no PyPI package ships
# one). A reranker that fails or times out leaves the search's own order, with a warning logged.
KNOWLEDGE_RERANKER = env.string("KNOWLEDGE_RERANKER", "") or ""
KNOWLEDGE_RERANKER_URL = env.string("KNOWLEDGE_RERANKER_URL", "") or ""
KNOWLEDGE_RERANKER_API_KEY = env.secret("KNOWLEDGE_RERANKER_API_KEY")
KNOWLEDGE_RERANKER_TIMEOUT_SECONDS = env.number("KNOWLEDGE_RERANKER_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# How many candidates a reranked search reads from its ranking (at least the results asked for).
KNOWLEDGE_RERANK_CANDIDATES = env.integer("KNOWLEDGE_RERANK_CANDIDATES", 30, minimum=1, maximum=200)
if KNOWLEDGE_RERANKER:
    _kind, _, _model = KNOWLEDGE_RERANKER.partition(":")
    if _kind not in ("remote", "fastembed") or not _model.strip():
        raise ImproperlyConfigured(f"KNOWLEDGE_RERANKER must be remote:<model> or fastembed:<model>, got {KNOWLEDGE_RERANKER!r}")
    if _kind == "remote" and not KNOWLEDGE_RERANKER_URL:
        raise ImproperlyConfigured("KNOWLEDGE_RERANKER=remote:<model> needs KNOWLEDGE_RERANKER_URL (the endpoint's /rerank URL)")
if KNOWLEDGE_RERANKER_URL and not KNOWLEDGE_RERANKER_URL.lower().startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"KNOWLEDGE_RERANKER_URL must be an http:// or https:// URL, got {KNOWLEDGE_RERANKER_URL!r}")
