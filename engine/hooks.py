"""Pre-hooks and post-hooks: functions a component runs before the model sees the input and after
it answers. A guardrail (``engine.guardrails``) is a pre-hook that may refuse.

A hook is a plain function (sync or async) or a guardrail. It is called with the keyword
arguments it names, out of: ``run_input`` (a ``RunInput``, pre-hooks; changing its
``input_content`` changes what the model sees), ``run_output`` (the RunOutput dict, post-hooks;
changing its ``content`` changes the answer), ``agent``, ``team``, ``run_context``, ``user_id``,
``session_id``, ``session_state``, ``metadata`` and ``dependencies`` (a ``**kwargs`` hook gets
them all). As in Agno, a hook that raises anything but ``InputCheckError`` / ``OutputCheckError``
is logged and the run goes on; those two end the run with a ``RunError`` naming the reason.

Each hook is announced by ``PreHookStarted`` / ``PreHookCompleted`` (``pre_hook_name``) or
``PostHookStarted`` / ``PostHookCompleted`` (``post_hook_name``), which the tracer makes spans.

``run_hooks_in_background`` (the component's, or ``@hook(run_in_background=True)`` on one hook):
such post-hooks do not run in the run at all. Their names are the run's ``background_hooks``,
for the caller to run once the answer is delivered and stored (``run_background_hooks``), so a
slow hook never delays the user. Pre-hooks always run in the run: a guardrail must be able to
refuse before the model is called.
"""
from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.aio import in_tool_thread
from engine.errors import InputCheckError
from engine.guardrails import Guardrail

if TYPE_CHECKING:
    from engine.runner import AgentRun

logger = logging.getLogger(__name__)

BACKGROUND_ATTR = "_run_hook_in_background"

Hook = Callable[..., Any] | Guardrail


def hook(fn: Callable[..., Any] | None = None, *, run_in_background: bool = False) -> Any:
    """Mark a post-hook to run after the answer is delivered (``@hook(run_in_background=True)``),
    whatever its component's ``run_hooks_in_background``. ``@hook`` alone changes nothing."""

    def mark(function: Callable[..., Any]) -> Callable[..., Any]:
        setattr(function, BACKGROUND_ATTR, run_in_background or getattr(function, BACKGROUND_ATTR, False))
        return function

    return mark(fn) if fn is not None else mark


def hook_name(h: Hook) -> str:
    """How events, traces and the background job name a hook: a guardrail's ``name``, a
    function's ``__name__``, else its type's name (a callable object)."""
    if isinstance(h, Guardrail):
        return h.name
    return getattr(h, "__name__", None) or type(h).__name__


def check_hooks(hooks: Sequence[Hook], *, what: str) -> list[Hook]:
    """The hooks as a list; refuses anything that is not callable, and two with one name (a
    background hook is found again by its name)."""
    found: list[Hook] = []
    names: set[str] = set()
    for h in hooks:
        if not callable(h) and not isinstance(h, Guardrail):
            raise TypeError(f"{what} are functions or guardrails, not {type(h).__name__}")
        name = hook_name(h)
        if name in names:
            raise ValueError(f"Two {what} are named {name!r}")
        names.add(name)
        found.append(h)
    return found


def in_background(h: Hook, component_default: bool) -> bool:
    return component_default or bool(getattr(h, BACKGROUND_ATTR, False))


@dataclass
class RunInput:
    """What a pre-hook may read and change: the user's message and its media."""

    input_content: Any
    images: list[dict[str, Any]] | None = None
    files: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> RunInput:
        return cls(stored.get("input_content"), stored.get("images"), stored.get("files"))

    def input_content_string(self) -> str:
        content = self.input_content
        return content if isinstance(content, str) else "" if content is None else str(content)


@dataclass
class HookOutcome:
    """What one hook did: its name, whether it is a guardrail, and the error it raised (not a
    check error: those end the run), for the Completed event."""

    name: str
    guardrail: bool
    error: str | None = None
    # When it ran (the clock's seconds), for the caller's trace of it.
    started: float = 0.0
    ended: float = 0.0


async def call_hook(h: Hook, arguments: Mapping[str, Any]) -> str | None:
    """Call one hook with the arguments it names. Returns the error it raised, as text, or None;
    a check error propagates (it ends the run)."""
    try:
        if isinstance(h, Guardrail):
            await h.acheck(arguments["run_input"])
            return None
        kwargs = _wanted(h, arguments)
        if inspect.iscoroutinefunction(h) or inspect.iscoroutinefunction(getattr(h, "__call__", None)):
            await h(**kwargs)
        else:
            result = await in_tool_thread(h, **kwargs)  # a sync hook may block: never on the loop's thread
            if inspect.isawaitable(result):
                await result
        return None
    except InputCheckError:
        raise
    except Exception as exc:  # as Agno: a broken hook is logged, the run goes on
        logger.warning("hook failed", extra={"hook": hook_name(h), "error": type(exc).__name__})
        return f"{type(exc).__name__}: {exc}"


def _wanted(h: Callable[..., Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    try:
        parameters = inspect.signature(h).parameters.values()
    except (TypeError, ValueError):
        return dict(arguments)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(arguments)
    names = {p.name for p in parameters}
    return {name: value for name, value in arguments.items() if name in names}


def _arguments(run: AgentRun, **values: Any) -> dict[str, Any]:
    ctx, state = run.ctx, run.state
    return {
        "agent": run.agent, "team": getattr(run, "team", None), "run_context": ctx, "user_id": ctx.user_id,
        "session_id": ctx.session_id, "session_state": state.session_state, "metadata": state.metadata,
        "dependencies": ctx.dependencies, **values,
    }


# ---- the run's steps (engine.runner) -------------------------------------------------


async def pre_hook_steps(run: AgentRun) -> AsyncIterator[dict[str, Any]]:
    """Run the component's pre-hooks in order, before anything else reads the input; a changed
    input (a masked one) replaces the user's message. A refusal propagates as InputCheckError."""
    run_input = RunInput.of(run.state.input)
    before = run_input.input_content
    arguments = _arguments(run, run_input=run_input)
    for h in run.agent.pre_hooks:
        name, guardrail = hook_name(h), isinstance(h, Guardrail)
        for event in run.emit(run.event_factory.make("PreHookStarted", pre_hook_name=name, guardrail=guardrail)):
            yield event
        seen = run_input.input_content
        error = await call_hook(h, arguments)
        changed = run_input.input_content != seen
        completed = run.event_factory.make(
            "PreHookCompleted", pre_hook_name=name, guardrail=guardrail, error=error,
            run_input={"input_content": run_input.input_content} if changed else None,
        )
        for event in run.emit(completed):
            yield event
    if run_input.input_content != before:
        _replace_input(run, run_input.input_content)


def _replace_input(run: AgentRun, content: Any) -> None:
    """The masked input is what the run keeps and what the model reads: its input and its user
    message (the last one: pre-hooks run before anything is added after it)."""
    run.state.input["input_content"] = content
    run.replaced_input = dict(run.state.input)
    for message in reversed(run.state.messages):
        if message.get("role") == "user":
            message["content"] = content if isinstance(content, str) else str(content)
            break


async def post_hook_steps(run: AgentRun) -> AsyncIterator[dict[str, Any]]:
    """Run the component's post-hooks on the answer (a changed ``content`` replaces it); those
    that run in the background are left in ``run.background_hooks`` for the caller. An
    OutputCheckError propagates."""
    background = run.agent.run_hooks_in_background
    for h in run.agent.post_hooks:
        name = hook_name(h)
        if in_background(h, background):
            run.background_hooks.append(name)
            continue
        for event in run.emit(run.event_factory.make("PostHookStarted", post_hook_name=name)):
            yield event
        output = run.output
        error = await call_hook(h, _arguments(run, run_output=output))
        if output.get("content") != run.state.content:
            run.state.content = output.get("content")
        for event in run.emit(run.event_factory.make("PostHookCompleted", post_hook_name=name, error=error)):
            yield event


# ---- after the run (the caller's job) --------------------------------------------------------


def child_hooks(run: Any) -> list[dict[str, Any]]:
    """A finished inner run's background post-hooks (a team member's, a workflow step's agent or
    team), and those of the runs inside it, for the top-level run's caller to queue:
    ``{run_id, component_id, kind, hooks}`` each (the run is stored as a child row by then)."""
    found = list(getattr(run, "child_background_hooks", ()))
    if getattr(run, "background_hooks", None):
        component = run.agent if not hasattr(run, "team") else run.team
        kind = "team" if hasattr(run, "team") else "agent"
        found.insert(0, {"run_id": run.state.run_id, "component_id": component.id, "kind": kind, "hooks": list(run.background_hooks)})
    return found


def component_inside(root: Any, component_id: str) -> Any | None:
    """The agent or team of id ``component_id`` inside ``root`` (a team's members, recursively; a
    workflow's agent and team steps at any depth, and their members), or None."""
    candidates = list(getattr(root, "members", ()))
    steps = list(getattr(root, "steps", ()))
    while steps:
        step = steps.pop(0)
        for label in ("steps", "else_steps", "choices"):
            steps.extend(getattr(step, label, ()))
        candidates.extend(c for c in (getattr(step, "agent", None), getattr(step, "team", None)) if c is not None)
    while candidates:
        component = candidates.pop(0)
        if component.id == component_id:
            return component
        candidates.extend(getattr(component, "members", ()))
    return None


def background_hooks_of(component: Any, names: Sequence[str]) -> list[Hook]:
    """The post-hooks ``names`` of ``component`` (an Agent or a Team), in the component's order;
    a name it no longer has (a definition changed since the run) is skipped."""
    wanted = set(names)
    return [h for h in getattr(component, "post_hooks", ()) if hook_name(h) in wanted]


async def run_background_hooks(
    component: Any, names: Sequence[str], *, run_output: dict[str, Any], user_id: str | None, session_id: str | None,
    metadata: Mapping[str, Any] | None = None, clock: Callable[[], float] = time.time,
) -> list[HookOutcome]:
    """Run a finished run's background post-hooks (``run.background_hooks``), in order, with the
    stored RunOutput dict. Returns what each did; nothing here changes the stored run."""
    is_team = hasattr(component, "members")
    arguments = {
        "run_output": run_output, "agent": component, "team": component if is_team else None, "run_context": None,
        "user_id": user_id, "session_id": session_id, "session_state": run_output.get("session_state"),
        "metadata": metadata if metadata is not None else run_output.get("metadata"), "dependencies": None,
    }
    outcomes = []
    for h in background_hooks_of(component, names):
        started = clock()
        try:
            error = await call_hook(h, arguments)
        except InputCheckError as exc:  # too late to refuse: the answer was delivered
            error = f"{type(exc).__name__}: {exc.message}"
        outcomes.append(HookOutcome(name=hook_name(h), guardrail=isinstance(h, Guardrail), error=error, started=started, ended=clock()))
    return outcomes
