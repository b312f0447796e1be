"""Tools: the ``@tool`` decorator and the ``Function`` it builds."""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints, overload

from engine.models.base import ToolSpec
from engine.tools.schema import parse_docstring, type_name, type_schema

# Parameters the runtime fills in; they never appear in the schema the model sees.
# ``run_context``: the run's RunContext (its run, session and user ids), as Agno passes it.
INJECTED_PARAMS = frozenset({"session_state", "dependencies", "run_context"})

# Agno's approval types: "required" pauses the run until an operator (or a caller holding
# approvals:write) resolves its approval row; "audit" only records the human's decision.
APPROVAL_TYPES = ("required", "audit")
# Set by ``@approval`` on a plain callable below ``@tool``, read when the Function is built.
_APPROVAL_ATTR = "_agno_approval_type"


@dataclass(frozen=True)
class Param:
    name: str
    annotation: Any
    description: str
    required: bool


@dataclass(frozen=True)
class Function:
    """A callable the model can use, with its JSON schema and human-in-the-loop flags.

    Used as a class attribute (``@tool`` on a ``Toolkit`` method) it binds like a method.
    """

    name: str
    description: str
    entrypoint: Callable[..., Any]
    params: tuple[Param, ...] = ()
    injected: frozenset[str] = frozenset()
    requires_confirmation: bool = False
    requires_user_input: bool = False
    user_input_fields: tuple[str, ...] = ()
    external_execution: bool = False
    stop_after_tool_call: bool = False
    approval_type: str | None = None

    @classmethod
    def from_callable(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_confirmation: bool = False,
        requires_user_input: bool = False,
        user_input_fields: Sequence[str] | None = None,
        external_execution: bool = False,
        stop_after_tool_call: bool = False,
        approval_type: str | None = None,
    ) -> Function:
        if isinstance(fn, Function):
            return fn
        approval_type = approval_type or getattr(fn, _APPROVAL_ATTR, None)
        signature = inspect.signature(fn)
        try:
            hints = get_type_hints(fn)
        except Exception:  # unresolvable forward references: fall back to untyped parameters
            hints = {}
        doc_description, param_docs = parse_docstring(inspect.getdoc(fn))
        params: list[Param] = []
        injected: set[str] = set()
        for index, (param_name, parameter) in enumerate(signature.parameters.items()):
            if index == 0 and param_name in ("self", "cls"):
                continue
            if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            if param_name in INJECTED_PARAMS:
                injected.add(param_name)
                continue
            params.append(
                Param(
                    name=param_name,
                    annotation=hints.get(param_name, parameter.annotation),
                    description=param_docs.get(param_name, ""),
                    required=parameter.default is inspect.Parameter.empty,
                )
            )
        fields = tuple(user_input_fields or ())
        unknown = [f for f in fields if f not in {p.name for p in params}]
        if unknown:
            raise ValueError(f"user_input_fields {unknown} are not parameters of {fn.__name__}")
        requires_confirmation = _approval_flags(
            approval_type, requires_confirmation, requires_user_input or bool(fields), external_execution, fn.__name__,
        )
        return cls(
            name=name or fn.__name__,
            description=description if description is not None else doc_description,
            entrypoint=fn,
            params=tuple(params),
            injected=frozenset(injected),
            requires_confirmation=requires_confirmation,
            requires_user_input=requires_user_input or bool(fields),
            user_input_fields=fields,
            external_execution=external_execution,
            stop_after_tool_call=stop_after_tool_call,
            approval_type=approval_type,
        )

    @property
    def pauses(self) -> bool:
        """Whether a call pauses the run for a human before (or instead of) running."""
        return self.requires_confirmation or self.requires_user_input or self.external_execution

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema the model sees. Fields the user fills in are left out of it."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in self.params:
            if param.name in self.user_input_fields:
                continue
            schema = type_schema(param.annotation)
            if param.description:
                schema = {**schema, "description": param.description}
            properties[param.name] = schema
            if param.required:
                required.append(param.name)
        return {"type": "object", "properties": properties, "required": required}

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def user_input_schema(self, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Agno's ``user_input_schema``: every parameter, prefilled with what the model supplied."""
        return [
            {
                "name": p.name,
                "field_type": type_name(p.annotation),
                "description": p.description or None,
                "value": args.get(p.name),
            }
            for p in self.params
        ]

    def missing_user_input(self, args: Mapping[str, Any]) -> list[str]:
        """Fields a human still has to fill before the call can run."""
        wanted = self.user_input_fields or tuple(p.name for p in self.params if p.required)
        return [name for name in wanted if args.get(name) is None]

    @property
    def is_async(self) -> bool:
        """An ``async def`` tool: the run loop awaits it; a sync one runs in the tool pool."""
        return inspect.iscoroutinefunction(self.entrypoint)

    def execute(
        self,
        args: Mapping[str, Any],
        *,
        session_state: dict[str, Any] | None = None,
        dependencies: Mapping[str, Any] | None = None,
        run_context: Any = None,
    ) -> Any:
        """Call the tool synchronously (an async one on this thread's event loop)."""
        result = self.entrypoint(**self._kwargs(args, session_state, dependencies, run_context))
        if inspect.iscoroutine(result):
            result = _run_coroutine(result)
        return _joined(result)

    async def aexecute(
        self,
        args: Mapping[str, Any],
        *,
        session_state: dict[str, Any] | None = None,
        dependencies: Mapping[str, Any] | None = None,
        run_context: Any = None,
    ) -> Any:
        """Await an ``async def`` tool on the running loop."""
        result = self.entrypoint(**self._kwargs(args, session_state, dependencies, run_context))
        if inspect.iscoroutine(result):
            result = await result
        return _joined(result)

    def _kwargs(
        self, args: Mapping[str, Any], session_state: dict[str, Any] | None, dependencies: Mapping[str, Any] | None, run_context: Any = None,
    ) -> dict[str, Any]:
        kwargs = {key: _coerce(value, self._annotation(key)) for key, value in args.items()}
        if "session_state" in self.injected:
            kwargs["session_state"] = session_state if session_state is not None else {}
        if "dependencies" in self.injected:
            kwargs["dependencies"] = dependencies
        if "run_context" in self.injected:
            kwargs["run_context"] = run_context
        return kwargs

    def _annotation(self, name: str) -> Any:
        return next((p.annotation for p in self.params if p.name == name), None)

    def __get__(self, instance: Any, owner: type | None = None) -> Function:
        if instance is None or not hasattr(self.entrypoint, "__get__"):
            return self
        return dataclasses.replace(self, entrypoint=self.entrypoint.__get__(instance, owner))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.entrypoint(*args, **kwargs)


def _coerce(value: Any, annotation: Any) -> Any:
    """Models and forms send "3" for ints and "true" for bools; convert plain scalars only."""
    if get_origin(annotation) in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            annotation = options[0]
    if not isinstance(value, str):
        if annotation is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    try:
        if annotation is int:
            return int(value)
        if annotation is float:
            return float(value)
    except ValueError:
        return value
    if annotation is bool and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def _run_coroutine(coroutine: Any) -> Any:
    """An async tool called synchronously: on this thread's loop, or in another thread when this
    one already runs a loop (which cannot be blocked on it; the run loop awaits ``aexecute``)."""
    from engine.aio import run_sync

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_sync(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _joined(result: Any) -> Any:
    return "".join(str(item) for item in result) if inspect.isgenerator(result) else result


@overload
def tool(fn: Callable[..., Any], /) -> Function: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_confirmation: bool = False,
    requires_user_input: bool = False,
    user_input_fields: Sequence[str] | None = None,
    external_execution: bool = False,
    stop_after_tool_call: bool = False,
    requires_approval: bool = False,
    approval_type: str | None = None,
) -> Callable[[Callable[..., Any]], Function]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_confirmation: bool = False,
    requires_user_input: bool = False,
    user_input_fields: Sequence[str] | None = None,
    external_execution: bool = False,
    stop_after_tool_call: bool = False,
    requires_approval: bool = False,
    approval_type: str | None = None,
) -> Function | Callable[[Callable[..., Any]], Function]:
    """Make a function (or a ``Toolkit`` method) a tool; usable bare (``@tool``) or with options.

    The schema comes from the type hints; the description from the docstring's first paragraph,
    parameter descriptions from its Google-style ``Args:`` section. Parameters named
    ``session_state`` or ``dependencies`` are filled in by the runtime and hidden from the model.
    ``requires_approval=True`` (or ``approval_type="required"``, or ``@approval``) makes a call
    wait for an operator's approval; ``approval_type="audit"`` records the human's decision.
    """

    def decorate(target: Callable[..., Any]) -> Function:
        return Function.from_callable(
            target,
            name=name,
            description=description,
            requires_confirmation=requires_confirmation,
            requires_user_input=requires_user_input,
            user_input_fields=user_input_fields,
            external_execution=external_execution,
            stop_after_tool_call=stop_after_tool_call,
            approval_type=approval_type or ("required" if requires_approval else None),
        )

    if fn is not None:
        return decorate(fn)
    return decorate


def _approval_flags(approval_type: str | None, confirmation: bool, user_input: bool, external: bool, name: str) -> bool:
    """``requires_confirmation`` as Agno sets it for an approval type: a "required" approval of a
    tool that would not pause otherwise pauses it for confirmation; "audit" needs a pause of its own."""
    if approval_type is None:
        return confirmation
    if approval_type not in APPROVAL_TYPES:
        raise ValueError(f"Invalid approval type: {approval_type!r}. Must be 'required' or 'audit'.")
    if confirmation or user_input or external:
        return confirmation
    if approval_type == "audit":
        raise ValueError(
            f"@approval(type='audit') on {name} requires at least one HITL flag "
            "('requires_confirmation', 'requires_user_input', or 'external_execution') to be set on @tool()."
        )
    return True


def approval(fn: Any = None, /, *, type: str = "required") -> Any:
    """Agno's ``@approval``: mark a tool as needing approval (``type="required"``, the default) or
    as audited (``type="audit"``). Usable bare or with options, above or below ``@tool``."""
    if type not in APPROVAL_TYPES:
        raise ValueError(f"Invalid approval type: {type!r}. Must be 'required' or 'audit'.")

    def apply(target: Any) -> Any:
        if isinstance(target, Function):
            confirmation = _approval_flags(type, target.requires_confirmation, target.requires_user_input, target.external_execution, target.name)
            return dataclasses.replace(target, approval_type=type, requires_confirmation=confirmation)
        if callable(target):
            setattr(target, _APPROVAL_ATTR, type)
            return target
        raise TypeError(f"@approval must be applied to a callable or Function, got {target.__class__.__name__}")

    return apply(fn) if fn is not None else apply
