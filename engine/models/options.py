"""The generation options a model definition may carry, per provider, checked where they are set.

A definition (code or the admin's) names options once; a provider takes those its API has and
refuses the others with an error that names them, so a typo or an option the provider lacks is
a clear error when the definition is saved, never a silent no-op or a 400 at run time.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# What each provider's constructor takes besides its connection settings (api_key, base_url,
# timeout), which belong to the deployment, not to a definition.
OPENAI_OPTIONS = (
    "temperature", "max_tokens", "top_p", "stop", "seed", "response_format",
    "reasoning_effort", "reasoning_summary", "service_tier", "verbosity",
)
ANTHROPIC_OPTIONS = ("temperature", "max_tokens", "top_p", "stop", "thinking_budget")
# The offline model takes every option (so a definition can switch provider and back) and
# ignores them, except that reasoning_effort and thinking_budget make it think aloud first.
OFFLINE_OPTIONS = tuple(dict.fromkeys(OPENAI_OPTIONS + ANTHROPIC_OPTIONS))
PROVIDER_OPTIONS = {"openai": OPENAI_OPTIONS, "anthropic": ANTHROPIC_OPTIONS, "offline": OFFLINE_OPTIONS}
# Anthropic's floor for an extended-thinking budget.
MIN_THINKING_BUDGET = 1024


def definition_options(provider: str, options: Any) -> dict[str, Any]:
    """``options`` as a definition may store them for ``provider`` (a JSON object of known
    option names), or ValueError naming what is wrong."""
    if not isinstance(options, Mapping):
        raise ValueError("Model options are a JSON object, e.g. {\"reasoning_effort\": \"high\"}")
    known = PROVIDER_OPTIONS.get(provider, ())
    unknown = sorted(str(key) for key in options if key not in known)
    if unknown:
        raise ValueError(f"{provider} models do not take {', '.join(unknown)}; they take {', '.join(known)}")
    return dict(options)


def effort_text(name: str, value: Any) -> str | None:
    """A string option such as ``reasoning_effort``: any non-empty string (the APIs keep adding
    values, as v3 widened them), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")
    return value.strip()


def unit_float(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number from 0 to 1, not {value!r}")
    return float(value)


def whole_number(name: str, value: Any, *, minimum: int = 0) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, not {value!r}")
    return value


def stop_list(value: Any) -> list[str] | None:
    """``stop``: one sequence or a list of them."""
    if value is None:
        return None
    items: Sequence[Any] = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [None]
    if not items or not all(isinstance(item, str) and item for item in items):
        raise ValueError(f"stop must be a string or a list of strings, not {value!r}")
    return list(items)


def response_format_object(value: Any) -> dict[str, Any] | None:
    """OpenAI's ``response_format``: an object with a ``type`` (``json_object``, ``text``,
    ``json_schema`` with its schema)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise ValueError(f'response_format must be an object with a "type", e.g. {{"type": "json_object"}}, not {value!r}')
    return dict(value)
