"""A ``POST /v1/rerank`` server speaking the common rerank API (Cohere, Jina, Infinity, vLLM):
``{model, query, documents, top_n}`` answers ``{results: [{index, relevance_score}]}``.

Every document containing ``prefer`` scores 0.9, the others less in the order given; ``mode``
makes it answer otherwise: ``logits`` (scores ten times larger), ``status`` (a 503), ``garbage``
(an index out of range) or ``hang`` (no answer until ``stop()``).
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._base import FakeServer, Recorded

__all__ = ["FakeRerankServer"]


class FakeRerankServer(FakeServer):
    paths = ("/v1/rerank",)

    def __init__(self) -> None:
        super().__init__()
        self.mode = "rank"
        self.prefer = ""
        self.release = threading.Event()  # a hanging answer waits for this (set by stop())

    @property
    def url(self) -> str:
        return f"{self.origin}/v1/rerank"

    def stop(self) -> None:
        self.release.set()
        super().stop()

    def respond(self, handler: BaseHTTPRequestHandler, recorded: Recorded, item: Any) -> None:
        body = recorded.body
        if self.mode == "hang":
            self.release.wait(30)
            return self.send_json(handler, 200, {"results": []})
        if self.mode == "status":
            return self.send_json(handler, 503, {"error": "overloaded"})
        if self.mode == "garbage":
            return self.send_json(handler, 200, {"results": [{"index": len(body["documents"]) + 5, "relevance_score": 0.5}]})
        scores = [
            (0.9 if self.prefer and self.prefer in document else 0.5 - 0.1 * index) * (10 if self.mode == "logits" else 1)
            for index, document in enumerate(body["documents"])
        ]
        ranked = sorted(range(len(scores)), key=lambda index: -scores[index])[: body["top_n"]]
        self.send_json(handler, 200, {"id": "r1", "results": [{"index": index, "relevance_score": scores[index]} for index in ranked]})
