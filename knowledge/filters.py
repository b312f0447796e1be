"""``knowledge_filters``: conditions on chunk metadata, compiled to one queryset filter.

Two shapes, as AgentOS takes them:

- a plain object, ``{"topic": "finance", "year": 2024}``: every key equal to its value;
- Agno's filter expressions (``agno.filters``' ``to_dict()``): ``{"op": "EQ", "key": ..., "value":
  ...}`` with ``EQ NEQ IN GT GTE LT LTE CONTAINS STARTSWITH`` on a key, ``AND``/``OR`` over
  ``conditions`` and ``NOT`` over a ``condition``; or a list of them, all of which must hold.

Keys are looked up as one JSON path element each (``KeyTransform``), whatever characters they
hold, so a key cannot smuggle in a lookup (``"a__contains"`` is a key). Malformed input raises
``FilterError`` with what is wrong (a client error).
"""
from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform, KeyTransform

MAX_DEPTH = 10
MAX_CONDITIONS = 50
SCALARS = (str, int, float, bool)
COMPARISONS = {"GT": "gt", "GTE": "gte", "LT": "lt", "LTE": "lte"}


class FilterError(ValueError):
    pass


class _Compiler:
    def __init__(self) -> None:
        self.aliases: dict[str, Any] = {}

    def _alias(self, key: Any, text: bool = False) -> str:
        if not isinstance(key, str) or not key:
            raise FilterError("a filter's key must be a non-empty string")
        if len(self.aliases) >= MAX_CONDITIONS:
            raise FilterError(f"at most {MAX_CONDITIONS} filter conditions")
        name = f"_filter_{len(self.aliases)}"
        self.aliases[name] = (KeyTextTransform if text else KeyTransform)(key, "metadata")
        return name

    def equal(self, key: Any, value: Any) -> Q:
        if value is not None and not isinstance(value, SCALARS):
            raise FilterError(f"filter value for {key!r} must be a string, number, boolean or null")
        alias = self._alias(key)
        return Q(**{f"{alias}__isnull": True}) if value is None else Q(**{alias: value})

    def expression(self, node: Any, depth: int = 0) -> Q:
        if depth > MAX_DEPTH:
            raise FilterError(f"filters nest at most {MAX_DEPTH} deep")
        if not isinstance(node, dict) or "op" not in node:
            raise FilterError('a filter expression is an object with an "op"')
        op = str(node["op"]).upper()
        if op in ("AND", "OR"):
            conditions = node.get("conditions")
            if not isinstance(conditions, list) or not conditions:
                raise FilterError(f"{op} needs a non-empty list of conditions")
            combined = self.expression(conditions[0], depth + 1)
            for condition in conditions[1:]:
                combined = (combined & self.expression(condition, depth + 1)) if op == "AND" else (combined | self.expression(condition, depth + 1))
            return combined
        if op == "NOT":
            return ~self.expression(node.get("condition"), depth + 1)
        key = node.get("key")
        if op == "EQ":
            return self.equal(key, node.get("value"))
        if op == "NEQ":
            return ~self.equal(key, node.get("value"))
        if op == "IN":
            values = node.get("values")
            if not isinstance(values, list) or not all(isinstance(value, SCALARS) for value in values):
                raise FilterError("IN needs a list of strings, numbers or booleans as values")
            return Q(**{f"{self._alias(key)}__in": values})
        value = node.get("value")
        if op in COMPARISONS:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FilterError(f"{op} needs a number or a string value")
            return Q(**{f"{self._alias(key)}__{COMPARISONS[op]}": value})
        if op in ("CONTAINS", "STARTSWITH"):
            if not isinstance(value, str):
                raise FilterError(f"{op} needs a string value")
            return Q(**{f"{self._alias(key, text=True)}__{op.lower()}": value})
        raise FilterError(f"unknown filter operator {node['op']!r}")


def apply_filters(queryset: Any, filters: Any) -> Any:
    """``queryset`` (chunks) restricted by ``filters`` (None: unchanged)."""
    if filters is None or filters == {} or filters == []:
        return queryset
    compiler = _Compiler()
    if isinstance(filters, list):
        condition = compiler.expression({"op": "AND", "conditions": filters})
    elif isinstance(filters, dict) and "op" in filters:
        condition = compiler.expression(filters)
    elif isinstance(filters, dict):
        condition = Q()
        for key, value in filters.items():
            condition &= compiler.equal(key, value)
    else:
        raise FilterError("knowledge_filters must be an object, a filter expression or a list of filter expressions")
    return queryset.alias(**compiler.aliases).filter(condition)
