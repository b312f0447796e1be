"""The embedding column: pgvector's ``vector(n)`` on PostgreSQL, packed float32 bytes elsewhere.

On PostgreSQL it is pgvector's ``VectorField`` as it is (the HNSW index and ``<=>`` need the
``vector`` type). SQLite has no vector type: the same values are stored as a BLOB of
little-endian float32 (4 bytes per dimension, a quarter of the JSON text) and compared in process
(``knowledge.services.search``). Either way the model reads a ``list[float]``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from pgvector.django import VectorField


class EmbeddingField(VectorField):
    description = "Embedding (pgvector on PostgreSQL, float32 BLOB elsewhere)"

    def db_type(self, connection: Any) -> str:
        if connection.vendor == "postgresql":
            return super().db_type(connection)
        return "blob"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor == "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        if value is None:
            return None
        return np.asarray(value, dtype="<f4").tobytes()

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> list[float] | None:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return np.frombuffer(bytes(value), dtype="<f4").tolist()
        return super().from_db_value(value, expression, connection)
