"""Post-hooks an operator may give an agent or a team composed in the admin, by name.

A code module in ``AGENT_MODULES`` offers them as ``POST_HOOKS = [fn, ...]`` (by ``__name__``, as
``FUNCTIONS`` offers a workflow's steps); a stored version lists the names it runs, in order
(``post_hooks``). A hook marked ``@hook(run_in_background=True)`` runs after the answer, through
the job queue, as in code.
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from engine.hooks import BACKGROUND_ATTR

logger = logging.getLogger("agno_site.hooks")

POST_HOOKS_HELP = "Functions run on each answer, in order (the code modules' POST_HOOKS); a background one runs after the answer is delivered."


def _load_code_post_hooks(modules: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for module_name in modules:
        offered = getattr(importlib.import_module(module_name), "POST_HOOKS", [])
        if not isinstance(offered, (list, tuple)) or not all(callable(fn) and hasattr(fn, "__name__") for fn in offered):
            raise TypeError(f"{module_name}.POST_HOOKS must be a list of named functions")
        for fn in offered:
            if fn.__name__ in found and found[fn.__name__] is not fn:
                raise ValueError(f"two post-hooks share the name {fn.__name__!r}")
            found[fn.__name__] = fn
    return found


@lru_cache(maxsize=8)
def _code_post_hooks_for(modules: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    return _load_code_post_hooks(modules)


def code_post_hooks() -> dict[str, Callable[..., Any]]:
    return _code_post_hooks_for(tuple(settings.AGENT_MODULES))


def post_hook_choices() -> list[tuple[str, str]]:
    """``(name, label)`` of each offered post-hook: the first line of its docstring, and whether it
    runs in the background."""
    choices = []
    for name, fn in code_post_hooks().items():
        doc = (fn.__doc__ or "").strip().splitlines()[0] if (fn.__doc__ or "").strip() else ""
        background = " (in the background)" if getattr(fn, BACKGROUND_ATTR, False) else ""
        choices.append((name, f"{name}: {doc}{background}" if doc else f"{name}{background}"))
    return choices


def clean_post_hooks(names: object) -> None:
    """A version's ``post_hooks``: distinct names of offered post-hooks."""
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValidationError({"post_hooks": "A list of post-hook names."})
    if len(set(names)) != len(names):
        raise ValidationError({"post_hooks": "A post-hook is listed twice."})
    offered = code_post_hooks()
    unknown = [name for name in names if name not in offered]
    if unknown:
        raise ValidationError({"post_hooks": f"Unknown post-hooks: {', '.join(unknown)}. Offered: {', '.join(offered) or 'none'}."})


def named_post_hooks(names: Any) -> list[Callable[..., Any]]:
    """A stored version's post-hooks, by name; one no module offers any more is left out, logged."""
    offered = code_post_hooks()
    found = []
    for name in names or []:
        if name in offered:
            found.append(offered[name])
        else:
            logger.warning("unknown post-hook %r in a stored definition is ignored", name)
    return found
