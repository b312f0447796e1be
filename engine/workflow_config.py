"""A workflow's steps from stored JSON: the graph an operator composes in the admin.

The shape is Agno's ``Step.to_dict()`` family (what Agno's Studio stores and ``from_dict`` reads):
a list of step dicts, each with a ``type`` of ``Step``, ``Steps``, ``Parallel``, ``Loop``,
``Condition`` or ``Router``. Executors and callables are named, never inlined: a ``Step`` has one
of ``agent_id``, ``team_id`` or ``executor_ref`` (a registered function's name); a Loop's
``end_condition``, a Condition's ``evaluator`` and a Router's ``selector`` are registered
function names too (a Condition's evaluator may also be a plain bool). ``human_review`` is a
``HumanReview``'s fields as a dict. For example::

    [{"type": "Parallel", "name": "both", "steps": [
        {"type": "Step", "name": "draft", "agent_id": "drafter"},
        {"type": "Step", "name": "facts", "team_id": "research-team"}]},
     {"type": "Step", "name": "publish", "executor_ref": "shout",
      "human_review": {"requires_confirmation": true, "confirmation_message": "Publish it?"}}]

``steps_from_config`` checks everything (shape, ids, functions, nesting, review fields) before it
builds anything, and reports every problem with its place in the graph (``steps[0].steps[1]``)
in one ``StepConfigError``. Ids are resolved through ``Executors``, the caller's registry: this
module knows no storage.

A graph is bounded before anything walks it (the walk that checks the bounds is iterative, so no
graph exhausts the stack): containers nest at most ``MAX_DEPTH`` deep, a list of steps (a
Parallel's branches, a Router's choices) holds at most ``MAX_INNER_STEPS``, a graph at most
``MAX_STEPS`` in all; a Loop runs at most ``MAX_ITERATIONS`` times, a Step or a review retries at
most ``MAX_RETRIES`` times, a review waits at most ``MAX_REVIEW_TIMEOUT`` seconds; names, ids and
function names take at most ``MAX_NAME_CHARS`` characters, descriptions and review messages
``MAX_TEXT_CHARS``.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from engine.agent import Agent
from engine.team import Team
from engine.workflow_review import ON_ERROR, ON_REJECT, ON_TIMEOUT, HumanReview, SUPPORTED_REVIEWS
from engine.workflow_step import Step
from engine.workflow_steps import Condition, Loop, Parallel, Router, Steps

STEP_TYPES = ("Step", "Steps", "Parallel", "Loop", "Condition", "Router")

# The bounds of a stored graph (README, "Workflows composed in the admin").
MAX_DEPTH = 10  # container steps inside container steps
MAX_INNER_STEPS = 50  # steps in one list: the top level, a container's steps, else_steps or choices
MAX_STEPS = 500  # steps in a whole graph
MAX_ITERATIONS = 100  # a Loop's max_iterations
MAX_RETRIES = 10  # a Step's max_retries, a HumanReview's max_retries
MAX_REVIEW_TIMEOUT = 30 * 24 * 3600  # a HumanReview's timeout, in seconds: 30 days
MAX_NAME_CHARS = 255  # a name, step_id, agent_id, team_id or function name
MAX_TEXT_CHARS = 2000  # a description, a review's message
_INNER_KEYS = ("steps", "else_steps", "choices")
_NAME_KEYS = ("name", "step_id", "agent_id", "team_id", "executor_ref", "end_condition", "evaluator", "selector")

# The keys each type takes (beyond "type"), as Agno's to_dict writes them. "*_type" keys say
# what a callable reference is: only "function" (and "bool" for an evaluator) exist here; Agno's
# CEL expressions do not.
_COMMON = {"name", "description", "step_id"}
_KEYS = {
    "Step": _COMMON | {"agent_id", "team_id", "executor_ref", "max_retries", "skip_on_failure", "human_review"},
    "Steps": _COMMON | {"steps", "human_review"},
    "Parallel": _COMMON | {"steps"},
    "Loop": _COMMON | {"steps", "max_iterations", "end_condition", "end_condition_type", "human_review"},
    "Condition": _COMMON | {"evaluator", "evaluator_type", "steps", "else_steps", "human_review"},
    "Router": _COMMON | {"selector", "selector_type", "choices", "human_review"},
}
# Keys Agno's to_dict writes for settings this runtime does not have: a pasted Agno definition
# is taken when they hold Agno's defaults (what they mean then is what happens here).
_AGNO_DEFAULTS = {
    "Step": {"strict_input_validation": False, "add_workflow_history": None, "num_history_runs": 3},
    "Loop": {"forward_iteration_output": False},
}
_REVIEW_FIELDS = {f.name for f in fields(HumanReview)}
_REVIEW_BOOLS = ("requires_confirmation", "requires_user_input", "allow_multiple_selections", "requires_output_review", "requires_iteration_review")
_REVIEW_TEXTS = ("confirmation_message", "user_input_message", "output_review_message", "iteration_review_message")
_FIELD_TYPES = ("str", "int", "float", "bool", "list", "dict")
_INPUT_FIELD_KEYS = {"name", "field_type", "description", "required", "allowed_values"}


class StepConfigError(ValueError):
    """The stored graph cannot be built; ``problems`` are ``(path, message)`` pairs, in order."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{path}: {message}" if path else message for path, message in self.problems))


@dataclass(frozen=True)
class Executors:
    """What stored ids mean: each returns the live object, or None for an unknown id."""

    agent: Callable[[str], Agent | None]
    team: Callable[[str], Team | None]
    function: Callable[[str], Callable[..., Any] | None]


def steps_from_config(config: Any, executors: Executors) -> list[Any]:
    """The runtime steps of ``config``; a ``StepConfigError`` lists every problem found."""
    problems: list[tuple[str, str]] = []
    if not isinstance(config, list) or not config:
        raise StepConfigError([("", "The steps are a non-empty JSON list of step objects.")])
    out_of_bounds = _bounds(config)
    if out_of_bounds:  # nothing past a bound is walked (or built) any further
        raise StepConfigError(out_of_bounds)
    built = [_step(item, f"steps[{position}]", executors, problems) for position, item in enumerate(config)]
    names: dict[str, str] = {}
    for path, name in _named(config, "steps"):
        if name in names:
            problems.append((path, f"The step name {name!r} is used twice (also at {names[name]}): later steps read earlier outputs by name."))
        else:
            names[name] = path
    if problems:
        raise StepConfigError(problems)
    return built


def _bounds(config: list[Any]) -> list[tuple[str, str]]:
    """The bounds a graph breaks (MAX_*), found by an iterative walk that stops at each broken
    one: only then may the recursive checks and builders below walk it."""
    problems: list[tuple[str, str]] = []
    if len(config) > MAX_INNER_STEPS:
        return [("", f"At most {MAX_INNER_STEPS} steps in a list ({len(config)} here).")]
    pending: list[tuple[Any, str, int]] = [(item, f"steps[{position}]", 1) for position, item in reversed(list(enumerate(config)))]
    count = 0
    while pending:
        item, path, depth = pending.pop()
        count += 1
        if count > MAX_STEPS:
            problems.append(("", f"A workflow holds at most {MAX_STEPS} steps in all."))
            break
        if not isinstance(item, dict):
            continue  # said by the checks that follow
        for key in _NAME_KEYS:
            if isinstance(item.get(key), str) and len(item[key]) > MAX_NAME_CHARS:
                problems.append((f"{path}.{key}", f"At most {MAX_NAME_CHARS} characters ({len(item[key])} here)."))
        texts = [("description", item.get("description"))]
        if isinstance(item.get("human_review"), dict):
            texts += [(f"human_review.{key}", value) for key, value in item["human_review"].items() if key.endswith("_message")]
        for key, value in texts:
            if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
                problems.append((f"{path}.{key}", f"At most {MAX_TEXT_CHARS} characters ({len(value)} here)."))
        inner_lists = [(key, item[key]) for key in _INNER_KEYS if isinstance(item.get(key), list) and item[key]]
        if inner_lists and depth >= MAX_DEPTH:
            problems.append((path, f"Steps nest at most {MAX_DEPTH} deep: this {item.get('type') or 'step'} is at depth {depth} and holds more."))
            continue
        for key, inner in inner_lists:
            if len(inner) > MAX_INNER_STEPS:
                problems.append((f"{path}.{key}", f"At most {MAX_INNER_STEPS} steps in a list ({len(inner)} here)."))
                continue
            pending.extend((child, f"{path}.{key}[{position}]", depth + 1) for position, child in reversed(list(enumerate(inner))))
    return problems


def _named(items: list[Any], prefix: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        path = f"{prefix}[{position}]"
        if isinstance(item.get("name"), str) and item["name"]:
            found.append((path, item["name"]))
        for key in ("steps", "else_steps", "choices"):
            if isinstance(item.get(key), list):
                found.extend(_named(item[key], f"{path}.{key}"))
    return found


def _step(item: Any, path: str, executors: Executors, problems: list[tuple[str, str]]) -> Any:
    if not isinstance(item, dict):
        problems.append((path, f"A step is a JSON object with a \"type\" ({', '.join(STEP_TYPES)}), not {_kind(item)}."))
        return None
    step_type = item.get("type")
    if step_type not in STEP_TYPES:
        problems.append((path, f"Unknown step type {step_type!r}: one of {', '.join(STEP_TYPES)}."))
        return None
    before = len(problems)
    agno = _AGNO_DEFAULTS.get(step_type, {})
    for key in sorted(set(item) & set(agno)):
        if item[key] != agno[key]:
            problems.append((f"{path}.{key}", f"Not supported here: only Agno's default ({json.dumps(agno[key])})."))
    unknown = sorted(set(item) - _KEYS[step_type] - set(agno) - {"type"})
    if unknown:
        problems.append((path, f"{step_type} takes no {', '.join(map(repr, unknown))}. It takes: {', '.join(sorted(_KEYS[step_type]))}."))
    for key in ("name", "description", "step_id"):
        if item.get(key) is not None and not isinstance(item[key], str):
            problems.append((f"{path}.{key}", "A string."))
    review = _review(item.get("human_review"), f"{path}.human_review", step_type, problems) if "human_review" in _KEYS[step_type] else None
    common = {"name": item.get("name") or None, "description": item.get("description"), "step_id": item.get("step_id") or None}
    if step_type == "Step":
        step = _leaf(item, path, executors, problems, common, review)
        return step if len(problems) == before else None
    inner_key = "choices" if step_type == "Router" else "steps"
    inner = _list(item, inner_key, path, executors, problems, required=True)
    else_steps = _list(item, "else_steps", path, executors, problems, required=False) if step_type == "Condition" else []
    callable_ = None
    if step_type == "Loop":
        callable_ = _function(item, "end_condition", path, executors, problems, required=False)
        max_iterations = item.get("max_iterations", 3)
        if not _is_int(max_iterations) or not 1 <= max_iterations <= MAX_ITERATIONS:
            problems.append((f"{path}.max_iterations", f"A whole number from 1 to {MAX_ITERATIONS}."))
    elif step_type == "Condition":
        evaluator = item.get("evaluator", True)
        if isinstance(evaluator, bool):
            if item.get("evaluator_type") not in (None, "bool"):
                problems.append((f"{path}.evaluator_type", "\"bool\" for a true/false evaluator."))
            callable_ = evaluator
        else:
            callable_ = _function(item, "evaluator", path, executors, problems, required=True)
    elif step_type == "Router":
        callable_ = _function(item, "selector", path, executors, problems, required=True)
    if len(problems) != before:
        return None
    try:
        if step_type == "Steps":
            return Steps(steps=inner, human_review=review, **common)
        if step_type == "Parallel":
            return Parallel(*inner, **common)
        if step_type == "Loop":
            return Loop(steps=inner, end_condition=callable_, max_iterations=item.get("max_iterations", 3), human_review=review, **common)
        if step_type == "Condition":
            return Condition(evaluator=callable_, steps=inner, else_steps=else_steps, human_review=review, **common)
        return Router(selector=callable_, choices=inner, human_review=review, **common)
    except (TypeError, ValueError) as exc:  # the runtime's own rules, said where they apply
        problems.append((path, str(exc)))
        return None


def _leaf(item: dict[str, Any], path: str, executors: Executors, problems: list[tuple[str, str]], common: dict[str, Any], review: HumanReview | None) -> Step | None:
    before = len(problems)
    given = [key for key in ("agent_id", "team_id", "executor_ref") if item.get(key) not in (None, "")]
    if len(given) != 1:
        problems.append((path, "A Step has exactly one of agent_id, team_id or executor_ref" + (f" (it has {', '.join(given)})." if given else ".")))
        return None
    key = given[0]
    value = item[key]
    if not isinstance(value, str):
        problems.append((f"{path}.{key}", "An id (a string)."))
        return None
    executor: dict[str, Any] = {}
    if key == "agent_id":
        agent = executors.agent(value)
        if agent is None:
            problems.append((f"{path}.agent_id", f"No live agent {value!r}."))
        executor["agent"] = agent
    elif key == "team_id":
        team = executors.team(value)
        if team is None:
            problems.append((f"{path}.team_id", f"No live team {value!r}."))
        executor["team"] = team
    else:
        function = executors.function(value)
        if function is None:
            problems.append((f"{path}.executor_ref", f"No registered function {value!r}."))
        executor["executor"] = function
    max_retries = item.get("max_retries", 3)
    if not _is_int(max_retries) or not 0 <= max_retries <= MAX_RETRIES:
        problems.append((f"{path}.max_retries", f"A whole number from 0 to {MAX_RETRIES}."))
    skip = item.get("skip_on_failure", False)
    if not isinstance(skip, bool):
        problems.append((f"{path}.skip_on_failure", "true or false."))
    if len(problems) != before:
        return None
    try:
        return Step(**common, **executor, max_retries=max_retries, skip_on_failure=skip, human_review=review)
    except (TypeError, ValueError) as exc:
        problems.append((path, str(exc)))
        return None


def _list(item: dict[str, Any], key: str, path: str, executors: Executors, problems: list[tuple[str, str]], *, required: bool) -> list[Any]:
    value = item.get(key, [] if not required else None)
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        problems.append((f"{path}.{key}", f"A{' non-empty' if required else ''} list of steps."))
        return []
    return [_step(inner, f"{path}.{key}[{position}]", executors, problems) for position, inner in enumerate(value)]


def _function(item: dict[str, Any], key: str, path: str, executors: Executors, problems: list[tuple[str, str]], *, required: bool) -> Callable[..., Any] | None:
    kind = item.get(f"{key}_type")
    value = item.get(key)
    if kind not in (None, "function"):
        problems.append((f"{path}.{key}_type", f"Only \"function\" (a registered function's name); {kind!r} expressions are not supported."))
        return None
    if value in (None, ""):
        if required:
            problems.append((f"{path}.{key}", "The name of a registered function."))
        return None
    if not isinstance(value, str):
        problems.append((f"{path}.{key}", "The name of a registered function (a string)."))
        return None
    function = executors.function(value)
    if function is None:
        problems.append((f"{path}.{key}", f"No registered function {value!r}."))
    return function


def _review(value: Any, path: str, step_type: str, problems: list[tuple[str, str]]) -> HumanReview | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append((path, "An object of HumanReview fields."))
        return None
    before = len(problems)
    unknown = sorted(set(value) - _REVIEW_FIELDS)
    if unknown:
        problems.append((path, f"HumanReview has no {', '.join(map(repr, unknown))}. Its fields: {', '.join(sorted(_REVIEW_FIELDS))}."))
    for key in _REVIEW_BOOLS:
        if key in value and not isinstance(value[key], bool):
            problems.append((f"{path}.{key}", "true or false."))
    for key in _REVIEW_TEXTS:
        if value.get(key) is not None and not isinstance(value[key], str):
            problems.append((f"{path}.{key}", "A string."))
    for key, allowed in (("on_reject", ON_REJECT), ("on_error", ON_ERROR), ("on_timeout", ON_TIMEOUT)):
        if key in value and value[key] not in allowed:
            problems.append((f"{path}.{key}", f"One of {', '.join(allowed)}, not {value[key]!r}."))
    if "max_retries" in value and (not _is_int(value["max_retries"]) or not 0 <= value["max_retries"] <= MAX_RETRIES):
        problems.append((f"{path}.max_retries", f"A whole number from 0 to {MAX_RETRIES}."))
    if value.get("timeout") is not None and (not _is_int(value["timeout"]) or not 0 < value["timeout"] <= MAX_REVIEW_TIMEOUT):
        problems.append((f"{path}.timeout", f"Seconds, a whole number from 1 to {MAX_REVIEW_TIMEOUT} (30 days), or null for none."))
    supported = SUPPORTED_REVIEWS.get(step_type, set())
    for flag in ("requires_confirmation", "requires_user_input", "requires_output_review", "requires_iteration_review"):
        if value.get(flag) is True and flag not in supported:
            problems.append((f"{path}.{flag}", f"Not supported on {step_type}. Supported: {', '.join(sorted(supported)) or 'none'}."))
    _input_schema(value, path, problems)
    if len(problems) != before:
        return None
    try:
        review = HumanReview(**value)
    except (TypeError, ValueError) as exc:
        problems.append((path, str(exc)))
        return None
    return review


def _input_schema(value: dict[str, Any], path: str, problems: list[tuple[str, str]]) -> None:
    schema = value.get("user_input_schema")
    if schema is None:
        return
    where = f"{path}.user_input_schema"
    if not value.get("requires_user_input"):
        problems.append((where, "Only with requires_user_input: true."))
    if not isinstance(schema, list):
        problems.append((where, "A list of fields: {\"name\", \"field_type\", \"description\", \"required\", \"allowed_values\"}."))
        return
    seen: set[str] = set()
    for position, field in enumerate(schema):
        here = f"{where}[{position}]"
        if not isinstance(field, dict) or not isinstance(field.get("name"), str) or not field["name"]:
            problems.append((here, "A field is an object with a \"name\" (a string)."))
            continue
        unknown = sorted(set(field) - _INPUT_FIELD_KEYS)
        if unknown:
            problems.append((here, f"A field has no {', '.join(map(repr, unknown))}. Its keys: {', '.join(sorted(_INPUT_FIELD_KEYS))}."))
        if field.get("field_type", "str") not in _FIELD_TYPES:
            problems.append((f"{here}.field_type", f"One of {', '.join(_FIELD_TYPES)}, not {field.get('field_type')!r}."))
        if "required" in field and not isinstance(field["required"], bool):
            problems.append((f"{here}.required", "true or false."))
        if field.get("allowed_values") is not None and not isinstance(field["allowed_values"], list):
            problems.append((f"{here}.allowed_values", "A list of values."))
        if field["name"] in seen:
            problems.append((here, f"The field {field['name']!r} is listed twice."))
        seen.add(field["name"])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(type(value), type(value).__name__)
