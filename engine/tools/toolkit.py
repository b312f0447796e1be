"""Toolkits: a group of tools with a stable ``id`` (v3: AgentOS references toolkits by id)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engine.tools.function import Function


class Toolkit:
    """Base class. Subclasses decorate methods with ``@tool`` and set ``id`` and ``name``.

    ``include_tools`` / ``exclude_tools`` pick tools by name; ``requires_confirmation_tools``
    makes the named tools pause for a human (as in Agno).
    """

    id: str = "toolkit"
    name: str = "toolkit"
    instructions: str | None = None

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        tools: Sequence[Callable[..., Any] | Function] = (),
        include_tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        requires_confirmation_tools: Iterable[str] = (),
        instructions: str | None = None,
    ) -> None:
        if id is not None:
            self.id = id
        if name is not None:
            self.name = name
        if instructions is not None:
            self.instructions = instructions
        found = self._declared_functions() + [Function.from_callable(t) for t in tools]
        names = [f.name for f in found]
        for option, wanted in (("include_tools", include_tools), ("exclude_tools", exclude_tools),
                               ("requires_confirmation_tools", requires_confirmation_tools)):
            unknown = sorted(set(wanted or ()) - set(names))
            if unknown:
                raise ValueError(f"{option} names unknown tools of {type(self).__name__}: {unknown}")
        if include_tools is not None:
            found = [f for f in found if f.name in set(include_tools)]
        if exclude_tools is not None:
            found = [f for f in found if f.name not in set(exclude_tools)]
        confirm = set(requires_confirmation_tools)
        self._functions: list[Function] = [
            dataclasses.replace(f, requires_confirmation=True) if f.name in confirm else f for f in found
        ]

    def _declared_functions(self) -> list[Function]:
        """``@tool`` methods in definition order, base classes first, bound to this instance."""
        seen: dict[str, Function] = {}
        for cls in reversed(type(self).__mro__):
            for attr, value in vars(cls).items():
                if isinstance(value, Function):
                    seen[attr] = value.__get__(self, type(self))
        return list(seen.values())

    def functions(self) -> list[Function]:
        return list(self._functions)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "tools": [f.name for f in self._functions]}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r} tools={[f.name for f in self._functions]}>"
