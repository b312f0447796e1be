"""Factories: components built per request from the run's context (Agno's ``AgentFactory``,
``TeamFactory``, ``WorkflowFactory``, and callable ``tools``).

Two forms, both reported by the API as ``is_factory: true``:

* a **whole-definition factory**, ``AgentFactory(id=..., factory=fn)`` (likewise for teams and
  workflows) in a code module's ``AGENTS`` / ``TEAMS`` / ``WORKFLOWS``: ``fn(ctx)`` receives a
  ``FactoryContext`` (the run's user, session, session state, dependencies and the caller's
  ``factory_input``) and returns the component for that one run;
* a **tool factory**, ``Agent(tools=fn)``: ``fn`` is called at the start of every run with the
  parameters it names among ``agent``, ``run_context``, ``session_state``, ``user_id`` and
  ``dependencies``, and returns the run's tools, so a tenant's tools carry that tenant's
  credentials and nobody else's.

A factory refuses a caller with ``FactoryPermissionError`` (403) or a ``factory_input`` with
``FactoryValidationError`` (400); the API answers both in the AgentOS error shape.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from engine.context import RunContext


class FactoryError(Exception):
    """A factory could not build its component."""


class FactoryValidationError(FactoryError, ValueError):
    """The caller's ``factory_input`` does not fit the factory (a 400)."""


class FactoryPermissionError(FactoryError):
    """The factory will not build its component for this caller (a 403)."""


@dataclass(frozen=True)
class FactoryContext:
    """What a whole-definition factory builds from: the run's owner, its session and state,
    the request's ``dependencies`` and ``factory_input`` (a JSON object or None)."""

    user_id: str | None = None
    session_id: str | None = None
    session_state: Mapping[str, Any] | None = None
    dependencies: Mapping[str, Any] | None = None
    input: Mapping[str, Any] | None = None


class ComponentFactory:
    """A component built per request. ``id`` is its handle in URLs and sessions: the component
    the factory returns runs under it, whatever id it was given. ``input_schema`` (a JSON
    schema) is what ``/agents`` shows callers of ``factory_input``; ``required`` keys of it are
    checked before the factory is called."""

    kind: ClassVar[str] = ""

    def __init__(
        self,
        id: str,
        factory: Callable[[FactoryContext], Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        if not id:
            raise ValueError(f"{type(self).__name__} needs an id")
        if not callable(factory):
            raise TypeError(f"{type(self).__name__}.factory must be callable")
        self.id = id
        self.factory = factory
        self.name = name or id
        self.description = description
        self.input_schema = dict(input_schema) if input_schema is not None else None

    def build(self, ctx: FactoryContext) -> Any:
        """The component for one request, under this factory's id."""
        self._check_input(ctx.input)
        component = self.factory(ctx)
        if inspect.isawaitable(component):
            raise FactoryError(f"{type(self).__name__} {self.id!r}: the factory must be a plain function, not async")
        expected = self._expected()
        if not isinstance(component, expected):
            raise FactoryError(f"{type(self).__name__} {self.id!r} returned {type(component).__name__}, not {expected.__name__}")
        return component if component.id == self.id else component.with_options(id=self.id)

    def _check_input(self, value: Mapping[str, Any] | None) -> None:
        if self.input_schema is None:
            return
        missing = [key for key in self.input_schema.get("required") or [] if key not in (value or {})]
        if missing:
            raise FactoryValidationError(f"factory_input is missing {', '.join(missing)}")

    def _expected(self) -> type:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r}>"


class AgentFactory(ComponentFactory):
    kind = "agent"

    def _expected(self) -> type:
        from engine.agent import Agent

        return Agent


class TeamFactory(ComponentFactory):
    kind = "team"

    def _expected(self) -> type:
        from engine.team import Team

        return Team


class WorkflowFactory(ComponentFactory):
    kind = "workflow"

    def _expected(self) -> type:
        from engine.workflow import Workflow

        return Workflow


def is_tool_factory(tools: Any) -> bool:
    """``tools`` is one callable that builds a run's tools, not a list of them."""
    from engine.tools.function import Function
    from engine.tools.toolkit import Toolkit

    return callable(tools) and not isinstance(tools, (list, tuple, type, Function, Toolkit))


def factory_tools(factory: Callable[..., Any], agent: Any, ctx: RunContext) -> list[Any]:
    """The tools ``factory`` builds for the run of ``ctx``: it is given what it names."""
    available = {
        "agent": agent, "run_context": ctx, "session_state": ctx.session_state if ctx.session_state is not None else {},
        "user_id": ctx.user_id, "dependencies": ctx.dependencies or {},
    }
    names = inspect.signature(factory).parameters
    tools = factory(**{name: value for name, value in available.items() if name in names})
    if inspect.isawaitable(tools):
        raise FactoryError("A tool factory must be a plain function, not async")
    if not isinstance(tools, (list, tuple)):
        raise FactoryError(f"A tool factory returns a list of tools, not {type(tools).__name__}")
    return list(tools)
