"""Query and form parameters, validated the way AgentOS (FastAPI) validates them, with 422s."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import invalid

TRUE_WORDS = {"true", "1", "yes", "on", "t", "y"}
FALSE_WORDS = {"false", "0", "no", "off", "f", "n"}


def text(params: Mapping[str, Any], name: str, *, where: str = "query") -> str | None:
    value = params.get(name)
    if value is None:
        return None
    return str(value)


def boolean(params: Mapping[str, Any], name: str, default: bool, *, where: str = "query") -> bool:
    value = params.get(name)
    if value is None or value == "":
        return default
    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise invalid([where, name], "Input should be a valid boolean, unable to interpret input", kind="bool_parsing", value=value)


def integer(
    params: Mapping[str, Any],
    name: str,
    default: int | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    where: str = "query",
) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise invalid([where, name], "Input should be a valid integer, unable to parse string as an integer", kind="int_parsing", value=value) from None
    if minimum is not None and number < minimum:
        raise invalid([where, name], f"Input should be greater than or equal to {minimum}", kind="greater_than_equal", value=value, ctx={"ge": minimum})
    if maximum is not None and number > maximum:
        raise invalid([where, name], f"Input should be less than or equal to {maximum}", kind="less_than_equal", value=value, ctx={"le": maximum})
    return number


def choice(params: Mapping[str, Any], name: str, options: Sequence[str], default: str | None = None, *, where: str = "query") -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return default
    if value not in options:
        expected = " or ".join(f"'{option}'" for option in options)
        raise invalid([where, name], f"Input should be {expected}", kind="enum", value=value, ctx={"expected": expected})
    return str(value)


def sort_order_param(params: Mapping[str, Any]) -> bool:
    """``sort_order`` as "descending?": asc|desc (default desc), anything else a 422 (AgentOS's enum)."""
    return choice(params, "sort_order", ("asc", "desc"), "desc") == "desc"


@dataclass(frozen=True)
class Page:
    page: int
    limit: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit


def page(params: Mapping[str, Any], *, default_limit: int = 20, max_limit: int | None = 1000) -> Page:
    """v3 pagination: 1-indexed pages; a ``page`` without a ``limit`` is refused, not guessed."""
    limit = integer(params, "limit", None, minimum=1, maximum=max_limit)
    number = integer(params, "page", None, minimum=1)
    if number is not None and limit is None:
        raise invalid(["query", "limit"], "limit is required when page is given (pages are 1-indexed)", kind="missing")
    return Page(page=number or 1, limit=limit or default_limit)


def envelope(items: list[Any], page: Page, total: int) -> dict[str, Any]:
    return {
        "data": items,
        "meta": {
            "page": page.page,
            "limit": page.limit,
            "total_pages": math.ceil(total / page.limit) if total else 0,
            "total_count": total,
            "search_time_ms": 0.0,
        },
    }


_EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)
_LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)


def epoch(seconds: int | None) -> datetime | None:
    """A Unix time as a datetime, clamped to what datetimes (and databases) can hold."""
    if seconds is None:
        return None
    try:
        return min(max(datetime.fromtimestamp(seconds, tz=timezone.utc), _EARLIEST), _LATEST)
    except (OverflowError, OSError, ValueError):
        return _LATEST if seconds > 0 else _EARLIEST


def created_window(params: Mapping[str, Any]) -> dict[str, datetime | None]:
    """``created_after``/``created_before`` (inclusive, whole seconds, as AgentOS compares them)."""
    after = integer(params, "created_after")
    before = integer(params, "created_before")
    return {
        "created_after": epoch(after),
        # A row at 100.5 s has created_at 100 in AgentOS: "before 100" must still include it.
        "created_before": None if before is None else min(epoch(before) + timedelta(seconds=1), _LATEST),  # type: ignore[operator]
    }
