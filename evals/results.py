"""Result files: ``file_path_to_save_results``, Agno's option, as a template of the eval's
``{run_id}`` (and ``{name}``).

Agno v3 renamed the placeholder: ``{eval_id}`` is no longer accepted (an eval object no longer
has one id shared by its re-runs; each run has its own ``run_id``), so a template naming it is
refused when the eval is submitted, saying what to write instead. Files are written only under
``EVALS_RESULTS_DIR``, in a folder of their owner's (``owner_folder``), so one user's file never
overwrites another's: a template is a path relative to that folder, and one that would leave it
(absolute, ``..``) is refused, so an API caller cannot write elsewhere on the server.

A template is not a Python format string: ``{run_id}`` and ``{name}`` are filled in as they are,
and a format spec or conversion (``{run_id:>999999999}``, ``{name!r}``) is refused, since one
builds strings of any size. The filled path is bounded as file systems bound paths:
``MAX_COMPONENT_BYTES`` per folder or file name and ``MAX_PATH_BYTES`` in all, the owner's
folder and ``EVALS_RESULTS_DIR`` included; the check runs when the eval is submitted, so a run
never fails on its file's name. Messages quote a template or a name at most ``QUOTE_CHARS`` long.
"""
from __future__ import annotations

import hashlib
import json
import string
from pathlib import Path, PurePosixPath
from typing import Any

PLACEHOLDERS = ("run_id", "name")
MAX_COMPONENT_BYTES = 255  # NAME_MAX: one folder or file name
MAX_PATH_BYTES = 4096  # PATH_MAX: the whole path, EVALS_RESULTS_DIR and the owner's folder included
OWNER_FOLDER_CHARS = 128  # the longest folder name owner_folder returns
RUN_ID_CHARS = 36  # a run_id is a UUID's text
QUOTE_CHARS = 80
SHARED_FOLDER = "_shared"  # the folder of evals without an owner (never an escaped user id: see owner_folder)
_SAFE = frozenset(string.ascii_letters + string.digits + "-")


class InvalidResultPath(ValueError):
    pass


def _quoted(value: str) -> str:
    """``value`` for a message or a log line: at most QUOTE_CHARS of it."""
    return repr(value) if len(value) <= QUOTE_CHARS else repr(value[:QUOTE_CHARS]) + f"... ({len(value)} characters)"


def owner_folder(owner_id: str | None) -> str:
    """The folder name of ``owner_id``'s result files: letters, digits and ``-`` as they are, every
    other character as ``_XX`` (its UTF-8 bytes in hex), so two ids never share a folder and none
    is ``.``, ``..`` or holds a ``/``. An id whose folder name would pass OWNER_FOLDER_CHARS keeps its
    start and ends in ``~`` and a SHA-256 of the whole id (``~`` is never part of an escaped id)."""
    if not owner_id:
        return SHARED_FOLDER  # "_s" is no escape ("_" is always followed by two hex digits)
    escaped = "".join(
        char if char in _SAFE else "".join(f"_{byte:02X}" for byte in char.encode("utf-8", "surrogatepass")) for char in owner_id
    )
    if len(escaped) <= OWNER_FOLDER_CHARS:
        return escaped
    digest = hashlib.sha256(owner_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{escaped[:OWNER_FOLDER_CHARS - len(digest) - 1]}~{digest}"


def _fields(template: str) -> list[tuple[str, str | None]]:
    """``(literal text, placeholder or None)`` pairs of a template, refused unless every
    placeholder is ``{run_id}`` or ``{name}`` as it is."""
    if not isinstance(template, str) or not template.strip():
        raise InvalidResultPath("file_path_to_save_results must be a relative path inside this server's EVALS_RESULTS_DIR")
    if len(template) > MAX_PATH_BYTES:
        raise InvalidResultPath(f"file_path_to_save_results is {len(template)} characters long: a path takes at most {MAX_PATH_BYTES} bytes")
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise InvalidResultPath(f"file_path_to_save_results is not a valid template: {exc}") from None
    pieces: list[tuple[str, str | None]] = []
    for literal, field, spec, conversion in parsed:
        if field is not None:
            if field == "eval_id":
                raise InvalidResultPath(
                    "file_path_to_save_results: {eval_id} is no longer accepted (Agno v3); use {run_id}, "
                    "the id of this eval run, which every re-run gets anew"
                )
            if field not in PLACEHOLDERS:
                raise InvalidResultPath(
                    f"file_path_to_save_results: unknown placeholder {_quoted('{' + field + '}')}; the placeholders are {{run_id}} and {{name}}"
                )
            if spec or conversion:
                raise InvalidResultPath(
                    f"file_path_to_save_results: {{{field}}} takes no format spec or conversion "
                    f"(write {{run_id}} or {{name}} alone, not {_quoted('{' + field + ('!' + conversion if conversion else '') + (':' + spec if spec else '') + '}')})"
                )
        pieces.append((literal, field))
    return pieces


def _fill(pieces: list[tuple[str, str | None]], *, run_id: str, name: str | None) -> str:
    values = {"run_id": run_id, "name": name or ""}
    return "".join(literal + (values[field] if field is not None else "") for literal, field in pieces)


def _check_filled(filled: str, *, root: str | Path | None) -> None:
    if "\x00" in filled:
        raise InvalidResultPath("file_path_to_save_results: a path holds no NUL character")
    relative = PurePosixPath(filled)
    if relative.is_absolute() or ".." in relative.parts or not filled.strip() or not relative.parts:
        raise InvalidResultPath("file_path_to_save_results must be a relative path inside this server's EVALS_RESULTS_DIR")
    try:
        encoded = filled.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidResultPath("file_path_to_save_results: the path (with {name} filled in) is not valid UTF-8 text") from None
    for part in relative.parts:
        size = len(part.encode("utf-8"))
        if size > MAX_COMPONENT_BYTES:
            raise InvalidResultPath(
                f"file_path_to_save_results: the name {_quoted(part)} is {size} bytes long with {{run_id}} and {{name}} filled in; "
                f"a folder or file name takes at most {MAX_COMPONENT_BYTES} bytes"
            )
    # EVALS_RESULTS_DIR, "/", the owner's folder (at its longest), "/" and the path: within PATH_MAX.
    overhead = (len(str(Path(root).resolve()).encode("utf-8")) if root else 0) + 1 + OWNER_FOLDER_CHARS + 1
    if overhead + len(encoded) > MAX_PATH_BYTES:
        raise InvalidResultPath(
            f"file_path_to_save_results: the path is {len(encoded)} bytes long with {{run_id}} and {{name}} filled in; "
            f"it takes at most {MAX_PATH_BYTES - overhead} bytes on this server ({MAX_PATH_BYTES} with EVALS_RESULTS_DIR and the owner's folder)"
        )


def result_path_check(template: str, *, name: str | None = None, root: str | Path | None = None) -> None:
    """Refuse a template this server cannot fill (InvalidResultPath, saying why): filled with
    ``name`` and a run_id (all of the same length), the path must stay inside the owner's folder
    and fit the bounds above."""
    pieces = _fields(template)
    _check_filled(_fill(pieces, run_id="0" * RUN_ID_CHARS, name=name), root=root)


def result_path(*, root: str | Path, template: str, run_id: str, name: str | None, owner_id: str | None) -> Path:
    """Where the result of ``owner_id``'s eval run ``run_id`` goes."""
    filled = _fill(_fields(template), run_id=run_id, name=name)
    _check_filled(filled, root=root)
    base = (Path(root).resolve() / owner_folder(owner_id)).resolve()
    target = (base / filled).resolve()
    if base not in target.parents:  # a name that smuggles a path in (or a link out)
        raise InvalidResultPath("file_path_to_save_results must stay inside this server's EVALS_RESULTS_DIR")
    return target


def result_store(*, root: str | Path, template: str, run_id: str, name: str | None, owner_id: str | None, eval_data: dict[str, Any]) -> Path:
    """Write ``eval_data`` as JSON (Agno's ``store_result_in_file``); returns the file's path."""
    target = result_path(root=root, template=template, run_id=run_id, name=name, owner_id=owner_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(eval_data, indent=4, ensure_ascii=False))
    return target
