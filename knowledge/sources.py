"""Remote content sources: server folders an operator offers for ingestion (``KNOWLEDGE_SOURCES``).

AgentOS's remote sources are buckets and drives (S3, GCS, SharePoint, GitHub) configured in code;
ours are folders on the server (a mounted share, a checked-out handbook), configured by
environment, of type ``local``. Listing pages through one folder level at a time, as S3's
``prefix`` + ``delimiter`` listing does. A path never leaves its folder: ``..``, absolute paths
and links that point outside are refused as if the file did not exist.
"""
from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings


class SourceError(ValueError):
    """A request about a source that cannot be answered (unknown source, bad path)."""


class SourceNotFound(SourceError):
    pass


@dataclass(frozen=True)
class Source:
    id: str
    root: Path

    @property
    def name(self) -> str:
        return self.root.name or self.id

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "type": "local", "metadata": {"root": self.root.name}, "prefix": None}


def sources() -> list[Source]:
    """The configured folders, in their configured order (bad entries are a settings error)."""
    found: list[Source] = []
    for entry in filter(None, (part.strip() for part in settings.KNOWLEDGE_SOURCES.split(";"))):
        source_id, separator, folder = entry.partition("=")
        if not separator or not source_id.strip() or not folder.strip():
            raise SourceError(f"KNOWLEDGE_SOURCES entries are id=/path pairs separated by ';', not {entry!r}")
        found.append(Source(source_id.strip(), Path(folder.strip()).expanduser().resolve()))
    return found


def source_get(source_id: str) -> Source:
    for source in sources():
        if source.id == source_id:
            return source
    raise SourceNotFound(f"Content source not found: {source_id}")


def _inside(source: Source, relative: str) -> Path:
    """``relative`` within the source's folder, resolved; ``SourceNotFound`` if it leaves it."""
    cleaned = (relative or "").strip().lstrip("/")
    candidate = (source.root / cleaned).resolve()
    if candidate != source.root and source.root not in candidate.parents:
        raise SourceNotFound(f"No such path in source {source.id}: {relative}")
    return candidate


def source_file(source_id: str, path: str) -> tuple[Path, str]:
    """The file ``path`` of a source and its media type. Folders are refused: a remote content is
    one file."""
    source = source_get(source_id)
    target = _inside(source, path)
    if target.is_dir():
        raise SourceError(f"Config {source_id} does not support folder uploads")
    if not target.is_file():
        raise SourceNotFound(f"No such file in source {source_id}: {path}")
    return target, mimetypes.guess_type(target.name)[0] or "application/octet-stream"


def source_listing(source_id: str, *, prefix: str = "", delimiter: str = "/", offset: int = 0, limit: int = 100) -> dict[str, object]:
    """One folder level of a source (``prefix`` names the folder, ending in ``/``): its subfolders
    and one page of its files, as AgentOS's ``SourceFilesResponseSchema`` lists a bucket. With an
    empty ``delimiter`` every file under the prefix is listed, without folders."""
    source = source_get(source_id)
    folder = _inside(source, prefix.rsplit("/", 1)[0] if "/" in prefix else "")
    stem = prefix.rsplit("/", 1)[-1] if prefix else ""
    if not folder.is_dir():
        raise SourceNotFound(f"No such folder in source {source_id}: {prefix}")

    def key(path: Path) -> str:
        return path.relative_to(source.root).as_posix()

    folders: list[dict[str, object]] = []
    if delimiter:
        entries = sorted(folder.iterdir(), key=lambda path: path.name)
        files = [path for path in entries if path.is_file() and path.name.startswith(stem) and _inside_quietly(source, path)]
        for path in entries:
            if path.is_dir() and path.name.startswith(stem) and _inside_quietly(source, path):
                folders.append({"prefix": key(path) + "/", "name": path.name, "is_empty": not any(path.iterdir())})
    else:
        files = sorted(
            (path for path in folder.rglob("*") if path.is_file() and key(path).startswith(prefix) and _inside_quietly(source, path)),
            key=key,
        )
    page = files[offset : offset + limit]
    return {
        "source_id": source.id,
        "source_name": source.name,
        "prefix": prefix or None,
        "folders": folders,
        "files": [
            {
                "key": key(path),
                "name": path.name,
                "size": path.stat().st_size,
                "last_modified": datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "content_type": mimetypes.guess_type(path.name)[0],
            }
            for path in page
        ],
        "total": len(files),
    }


def _inside_quietly(source: Source, path: Path) -> bool:
    """Whether a listed entry stays in the source once links are followed (links out are hidden)."""
    resolved = path.resolve()
    return resolved == source.root or source.root in resolved.parents
