"""Result files: ``file_path_to_save_results``, Agno's option, as a template of the eval's
``{run_id}`` (and ``{name}``).

Agno v3 renamed the placeholder: ``{eval_id}`` is no longer accepted (an eval object no longer
has one id shared by its re-runs; each run has its own ``run_id``), so a template naming it is
refused when the eval is submitted, saying what to write instead. Files are written only under
``EVALS_RESULTS_DIR``: a template is a path relative to it, and one that would leave it
(absolute, ``..``) is refused, so an API caller cannot write elsewhere on the server.
"""
from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

PLACEHOLDERS = ("run_id", "name")


class InvalidResultPath(ValueError):
    pass


def result_path_check(template: str) -> None:
    """Refuse a template this server cannot fill (InvalidResultPath, saying why)."""
    try:
        names = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError as exc:
        raise InvalidResultPath(f"file_path_to_save_results is not a valid template: {exc}") from None
    for name in names:
        if name == "eval_id":
            raise InvalidResultPath(
                "file_path_to_save_results: {eval_id} is no longer accepted (Agno v3); use {run_id}, "
                "the id of this eval run, which every re-run gets anew"
            )
        if name not in PLACEHOLDERS:
            raise InvalidResultPath(f"file_path_to_save_results: unknown placeholder {{{name}}}; the placeholders are {{run_id}} and {{name}}")
    relative = Path(template)
    if relative.is_absolute() or ".." in relative.parts or not template.strip():
        raise InvalidResultPath("file_path_to_save_results must be a relative path inside this server's EVALS_RESULTS_DIR")


def result_path(*, root: str | Path, template: str, run_id: str, name: str | None) -> Path:
    """Where the result of eval run ``run_id`` goes."""
    result_path_check(template)
    filled = template.format(run_id=run_id, name=name or "")
    base = Path(root).resolve()
    target = (base / filled).resolve()
    if base != target and base not in target.parents:  # a name that smuggles a path in
        raise InvalidResultPath("file_path_to_save_results must stay inside this server's EVALS_RESULTS_DIR")
    return target


def result_store(*, root: str | Path, template: str, run_id: str, name: str | None, eval_data: dict[str, Any]) -> Path:
    """Write ``eval_data`` as JSON (Agno's ``store_result_in_file``); returns the file's path."""
    target = result_path(root=root, template=template, run_id=run_id, name=name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(eval_data, indent=4, ensure_ascii=False))
    return target
