"""Queryset helpers every app's selectors share."""
from __future__ import annotations

from typing import Any

# Offsets and limits beyond a signed 64-bit integer make PostgreSQL and SQLite raise (an
# overflow in the driver, a 500); a page that far out is empty whatever the table holds.
SQL_INT_MAX = 2**63 - 1


def window(queryset: Any, *, offset: int, limit: int) -> list[Any]:
    """One page of rows: ``queryset[offset:offset + limit]``, empty past what SQL can count."""
    if offset >= SQL_INT_MAX:
        return []
    return list(queryset[offset : min(offset + limit, SQL_INT_MAX)])
