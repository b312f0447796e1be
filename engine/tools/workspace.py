"""A file toolkit rooted at a folder: list, read, search, write.

The access boundary follows Agno v3's ``Workspace``: paths resolving outside the root are refused
(symlinks included), and so is any path with a component matching the exclude patterns (env
files, keys, credential files and directories, see ``workspace_patterns.py``), tested both on the
path as written and on the file it resolves to, so a symlink to ``.env`` is refused too.
``allow_paths`` re-allows named workspace-relative paths; names beneath an allowed directory are
still tested. Refusals are tool results starting with ``Error:``, checked before any existence
test so they do not reveal whether the file exists. Known limit (as in Agno): a hard link to an
excluded file is not detected. Writes never follow a link: the directory is opened from the root
without following any, and the text goes to a fresh O_EXCL|O_NOFOLLOW temporary file renamed
into place.
"""
from __future__ import annotations

import json
import os
import posixpath
import re
import secrets
import stat
import unicodedata
from collections.abc import Iterable
from fnmatch import fnmatch, translate
from pathlib import Path, PureWindowsPath

from engine.tools.function import tool
from engine.tools.toolkit import Toolkit
from engine.tools.workspace_patterns import DEFAULT_EXCLUDE_PATTERNS, EXEMPT_PREFIX

ALIASES = {"read": "read_file", "list": "list_files", "search": "search_content", "write": "write_file"}
TEXT_SUFFIXES = frozenset(
    ".md .txt .csv .json .yaml .yml .xml .html .rst .log .toml .cfg .ini .env .example .sample .template .dist "
    ".py .pyi .js .ts .tsx .jsx .mjs .cjs .css .scss .vue .svelte .c .h .cpp .hpp .rs .go .java .kt .scala "
    ".cs .rb .php .pl .ex .exs .erl .hs .swift .lua .dart .sh .bash .zsh .ps1 .sql .graphql .tf .hcl .proto".split()
)
_RESERVED_RE = re.compile(r"^(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(\.|$)", re.IGNORECASE)
MAX_SEARCH_FILE_BYTES = 500 * 1024
# Checked before reading, so a huge file is never loaded into memory.
MAX_READ_BYTES = 20_000_000


class PathRefused(ValueError):
    pass


class Workspace(Toolkit):
    """``allowed`` aliases run silently, ``confirm`` aliases pause for a human (HITL); aliases in
    neither are not offered to the model. Defaults: read/list/search allowed, write confirmed."""

    id = "workspace"
    name = "workspace"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        allowed: Iterable[str] | None = None,
        confirm: Iterable[str] | None = None,
        allow_paths: Iterable[str] = (),
        exclude_patterns: Iterable[str] | None = None,
        max_file_length: int = 1_000_000,
        **kwargs: object,
    ) -> None:
        self.root = Path(root).resolve()
        self.max_file_length = max_file_length
        patterns = list(DEFAULT_EXCLUDE_PATTERNS if exclude_patterns is None else exclude_patterns)
        for pattern in patterns:
            if pattern == EXEMPT_PREFIX or "/" in pattern or "\\" in pattern:
                raise ValueError(f"exclude pattern {pattern!r} must name one path component")
        self.exclude_patterns = patterns
        self._fold = _case_insensitive(self.root)
        self._deny = _compile([p for p in patterns if not p.startswith(EXEMPT_PREFIX)], self._fold)
        self._exempt = _compile([p[1:] for p in patterns if p.startswith(EXEMPT_PREFIX)], self._fold)
        self._allowed_parts = self._resolve_allow_paths(list(allow_paths))

        allowed_aliases, confirm_aliases = _partition(allowed, confirm)
        super().__init__(
            include_tools=[ALIASES[a] for a in allowed_aliases + confirm_aliases],
            requires_confirmation_tools=[ALIASES[a] for a in confirm_aliases],
            **kwargs,  # type: ignore[arg-type]
        )

    # ---- the boundary -------------------------------------------------------------------------

    def _safe_join(self, path: str) -> Path:
        """Resolve ``path`` under the root; refuse absolute paths, odd segments and escapes."""
        if not path or not path.strip():
            raise PathRefused("empty path")
        path = unicodedata.normalize("NFKC", path)
        if any(unicodedata.category(ch) == "Cc" for ch in path):
            raise PathRefused("control characters in path")
        windows = PureWindowsPath(path)
        if path.startswith("/") or windows.drive or windows.is_absolute():
            raise PathRefused("absolute path")
        parts = []
        for segment in path.replace("\\", "/").split("/"):
            if segment in ("", ".", ".."):
                parts.append(segment)
                continue
            stripped = segment.rstrip(". ")
            if not stripped or _RESERVED_RE.match(stripped):
                raise PathRefused(f"invalid path segment {segment!r}")
            parts.append(stripped)
        target = (self.root / "/".join(parts)).resolve()
        try:
            target.relative_to(self.root)
        except ValueError:
            raise PathRefused("outside the root") from None
        return target

    def _lexical(self, path: str) -> Path:
        normalized = posixpath.normpath(unicodedata.normalize("NFKC", path).replace("\\", "/"))
        return self.root.joinpath(*[p for p in normalized.split("/") if p not in ("", ".", "..")])

    def _resolve_allow_paths(self, allow_paths: list[str]) -> list[tuple[str, ...]]:
        parts: list[tuple[str, ...]] = []
        for entry in allow_paths:
            try:
                resolved = self._safe_join(os.fspath(entry))
            except PathRefused as exc:
                raise ValueError(f"allow_paths entry {entry!r} is not a path inside the workspace: {exc}") from None
            if resolved == self.root:
                raise ValueError(f"allow_paths entry {entry!r} names the workspace root")
            for candidate in (self._lexical(entry), resolved):
                rel = candidate.relative_to(self.root).parts
                if rel and rel not in parts:
                    parts.append(rel)
        return parts

    def _component_excluded(self, part: str) -> bool:
        name = part.casefold() if self._fold else part
        if self._deny is None or not self._deny.match(name):
            return False
        return self._exempt is None or not self._exempt.match(name)

    def _allowed_depth(self, parts: tuple[str, ...]) -> int:
        depth = 0
        for allowed in self._allowed_parts:
            if depth < len(allowed) <= len(parts) and all(
                (a.casefold() == b.casefold()) if self._fold else a == b for a, b in zip(allowed, parts)
            ):
                depth = len(allowed)
        return depth

    def _is_excluded(self, path: Path) -> bool:
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        if not parts or not any(self._component_excluded(p) for p in parts):
            return False
        depth = self._allowed_depth(parts)
        # Names beneath an allowed directory are still tested: allow_paths=["build"] reaches
        # build/index.html but not build/.env.
        return depth == 0 or any(self._component_excluded(p) for p in parts[depth:])

    def _resolve(self, path: str, what: str = "path") -> Path:
        """The path to use, or ``PathRefused`` with the message the model gets."""
        try:
            resolved = self._safe_join(path)
        except PathRefused:
            raise PathRefused(f"Error: {what} escapes workspace root") from None
        excluded = self._is_excluded(resolved)
        if not excluded:
            covered = self._allowed_depth(resolved.relative_to(self.root).parts) > 0
            excluded = not covered and self._is_excluded(self._lexical(path))
        if excluded:
            raise PathRefused(f"Error: {what} is excluded from this workspace: {path}")
        return resolved

    def _hidden(self, entry: Path) -> bool:
        """Whether a listing or search skips ``entry`` (escapes, excluded, or links to excluded)."""
        try:
            target = self._safe_join(entry.relative_to(self.root).as_posix())
        except (PathRefused, ValueError):
            return True
        return self._is_excluded(entry) or (target != entry and self._is_excluded(target))

    # ---- tools --------------------------------------------------------------------------------

    @tool
    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a text file from the workspace, with line numbers.

        Args:
            path: File path relative to the workspace root.
            start_line: Optional 1-indexed first line to return.
            end_line: Optional 1-indexed last line to return (inclusive).
        """
        try:
            file_path = self._resolve(path)
        except PathRefused as exc:
            return str(exc)
        if not file_path.is_file():
            return f"Error: file not found: {path}"
        if file_path.stat().st_size > MAX_READ_BYTES:
            return f"Error: file too large to read ({file_path.stat().st_size} bytes > {MAX_READ_BYTES})"
        try:
            contents = file_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"Error reading file: {exc}"
        if start_line is None and end_line is None:
            if len(contents) > self.max_file_length:
                return f"Error: file too long ({len(contents)} chars > {self.max_file_length}); read a line range"
            return _numbered(contents, 1)
        lines = contents.split("\n")
        start = start_line or 1
        chunk = "\n".join(lines[max(0, start - 1) : min(len(lines), end_line or len(lines))])
        return _numbered(chunk, start)

    @tool
    def list_files(self, directory: str = ".", pattern: str | None = None, recursive: bool = False, max_depth: int = 3) -> str:
        """List files and directories in the workspace.

        Args:
            directory: Directory relative to the workspace root.
            pattern: Optional glob matched against entry names, e.g. "*.py".
            recursive: Walk subdirectories up to max_depth levels.
            max_depth: Depth limit when recursive.
        """
        try:
            base = self._resolve(directory, what="directory")
        except PathRefused as exc:
            return str(exc)
        if not base.is_dir():
            return f"Error: not a directory: {directory}"
        entries: list[Path] = []
        if recursive:
            base_depth = len(base.parts)
            for dirpath, dirnames, filenames in os.walk(base):
                here = Path(dirpath)
                dirnames[:] = [d for d in dirnames if not self._is_excluded(here / d)]
                visible_dirs = list(dirnames)
                if len(here.parts) - base_depth >= max_depth:
                    dirnames[:] = []
                entries.extend(here / n for n in filenames + visible_dirs)
        else:
            entries = list(base.iterdir())
        files = []
        for entry in sorted(entries):
            if self._hidden(entry) or (pattern and not fnmatch(entry.name, pattern)):
                continue
            try:
                is_dir = entry.is_dir()
                size = None if is_dir else entry.stat().st_size
            except OSError:
                continue
            files.append({"path": entry.relative_to(self.root).as_posix(), "type": "dir" if is_dir else "file", "size": size})
        return json.dumps({"directory": directory, "pattern": pattern, "recursive": recursive, "files": files}, indent=2)

    @tool
    def search_content(self, query: str, directory: str = ".", limit: int = 10) -> str:
        """Search text files in the workspace for a substring (case-insensitive).

        Args:
            query: Text to look for.
            directory: Directory relative to the workspace root to search in.
            limit: Maximum number of matching files to return.
        """
        if not query.strip():
            return "Error: query cannot be empty"
        try:
            base = self._resolve(directory, what="directory")
        except PathRefused as exc:
            return str(exc)
        if not base.is_dir():
            return f"Error: not a directory: {directory}"
        needle = query.lower()
        matches: list[dict[str, object]] = []
        for dirpath, dirnames, filenames in os.walk(base):
            here = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if not self._is_excluded(here / d))
            for filename in sorted(filenames):
                if len(matches) >= limit:
                    break
                file_path = here / filename
                if self._hidden(file_path) or file_path.suffix.lower() not in TEXT_SUFFIXES:
                    continue
                try:
                    if file_path.stat().st_size > MAX_SEARCH_FILE_BYTES:
                        continue
                    content = file_path.read_text(encoding="utf-8", errors="ignore")
                except OSError:
                    continue
                index = content.lower().find(needle)
                if index >= 0:
                    snippet = content[max(0, index - 200) : index + len(query) + 200]
                    matches.append({"file": file_path.relative_to(self.root).as_posix(), "snippet": snippet})
        return json.dumps({"query": query, "matches_found": len(matches), "files": matches}, indent=2)

    @tool
    def write_file(self, path: str, content: str, overwrite: bool = True) -> str:
        """Create or overwrite a text file in the workspace (parent directories are created).

        Args:
            path: File path relative to the workspace root.
            content: Text to write.
            overwrite: When false, refuse to replace an existing file.
        """
        try:
            file_path = self._resolve(path)
        except PathRefused as exc:
            return str(exc)
        try:
            directory = self._open_directory(file_path.parent)
        except PathRefused as exc:
            return str(exc)
        except OSError as exc:
            return f"Error writing file: {exc}"
        try:
            if not overwrite and _entry_exists(file_path.name, directory):
                return f"Error: file exists and overwrite=False: {path}"
            _write_replacing(directory, file_path.name, content)
        except OSError as exc:
            return f"Error writing file: {exc}"
        finally:
            os.close(directory)
        return f"Wrote {len(content)} chars to {path}"

    def _open_directory(self, directory: Path) -> int:
        """A descriptor of ``directory`` (created as needed), opened from the root one component at
        a time without following links. ``directory`` was resolved and checked, so it holds no
        links: one met here appeared since the check (a swapped parent) and is refused rather than
        followed out of the root."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in directory.relative_to(self.root).parts:
                try:
                    child = os.open(part, _DIRECTORY_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    os.mkdir(part, dir_fd=fd)
                    child = os.open(part, _DIRECTORY_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if _is_link(part, fd):
                        raise PathRefused("Error: path escapes workspace root") from exc
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd


# O_NOFOLLOW: a component that is a link fails (ELOOP or ENOTDIR) instead of being followed.
_DIRECTORY_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _is_link(name: str, directory: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _entry_exists(name: str, directory: int) -> bool:
    try:
        os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _write_replacing(directory: int, name: str, content: str) -> None:
    """Write a fresh temporary file in ``directory``, then rename it over ``name``, so a crash never
    leaves a half-written file. The temporary name is random and opened with O_EXCL|O_NOFOLLOW: a
    planted file or link of any name is never written through (rename replaces a link at ``name``
    itself, it does not follow it)."""
    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=directory)
        except FileNotFoundError:
            pass
        raise


def _partition(allowed: Iterable[str] | None, confirm: Iterable[str] | None) -> tuple[list[str], list[str]]:
    if allowed is None and confirm is None:
        return ["read", "list", "search"], ["write"]
    allowed_list, confirm_list = list(allowed or []), list(confirm or [])
    unknown = sorted(set(allowed_list + confirm_list) - set(ALIASES))
    if unknown:
        raise ValueError(f"Unknown Workspace alias(es) {unknown}; valid: {sorted(ALIASES)}")
    overlap = sorted(set(allowed_list) & set(confirm_list))
    if overlap:
        raise ValueError(f"Alias(es) {overlap} appear in both allowed and confirm")
    return allowed_list, confirm_list


def _compile(patterns: list[str], fold: bool) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(translate(p.casefold() if fold else p) for p in patterns))


def _case_insensitive(root: Path) -> bool:
    """Whether root's filesystem treats names differing only in case as one (macOS, Windows)."""
    name = root.name
    if name.swapcase() == name or not root.exists():
        return False
    try:
        return os.path.samefile(root, root.with_name(name.swapcase()))
    except OSError:
        return False


def _numbered(text: str, start: int) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return "\n".join(f"{i + start:6d}\t{line}" for i, line in enumerate(lines))
