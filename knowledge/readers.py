"""Readers: a content's bytes to text sections (a page of a PDF, a row block of a CSV, a document).

The reader is chosen by ``reader_id`` when given, else by the MIME type, else by the file name's
extension. A type no reader knows, a file a reader cannot parse, or one with no text at all
raises ``ReadError`` with a sentence the user can act on; the content then ends ``failed``.
"""
from __future__ import annotations

import csv
import io
import json
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class ReadError(ValueError):
    """The content cannot be read; the message is shown to the user as the failure reason."""


@dataclass
class Section:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    if b"\x00" in data[:4096]:
        raise ReadError("The file is binary, not text; upload it as PDF, DOCX, CSV, JSON, HTML, Markdown or plain text")
    return data.decode("latin-1")


def read_text(data: bytes) -> list[Section]:
    return [Section(_decode(data))]


def read_html(data: bytes) -> list[Section]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_decode(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "svg", "head"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else ""
    text = soup.get_text("\n")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    body = "\n".join(line for line in lines if line)
    return [Section(body, {"title": title} if title else {})]


def read_pdf(data: bytes) -> list[Section]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ReadError("The PDF is encrypted; upload a copy without a password")
        sections = []
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            if text.strip():
                sections.append(Section(text, {"page": number}))
    except ReadError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ReadError(f"The PDF could not be read ({exc}); is it a valid PDF file?") from None
    if not sections:
        raise ReadError("The PDF has no text layer (a scanned document?); text recognition (OCR) is not supported")
    return sections


def read_docx(data: bytes) -> list[Section]:
    import zipfile

    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ReadError(f"The Word document could not be read ({exc}); is it a .docx file (not .doc)?") from None
    lines: list[str] = []
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        style = (paragraph.style.name or "") if paragraph.style is not None else ""
        if style.startswith("Heading"):
            level = "".join(ch for ch in style if ch.isdigit()) or "1"
            text = "#" * min(6, int(level)) + " " + text  # headings kept as Markdown for the Markdown chunker
        lines.append(text)
    for table in document.tables:
        for row in table.rows:
            cells = [cell.text.strip() for cell in row.cells]
            if any(cells):
                lines.append(" | ".join(cells))
    return [Section("\n\n".join(lines))]


CSV_ROWS_PER_SECTION = 20


def read_csv(data: bytes) -> list[Section]:
    text = _decode(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    sections = []
    for start in range(0, len(body), CSV_ROWS_PER_SECTION):
        lines = [
            ", ".join(f"{name}: {value}" for name, value in zip(header, row) if value != "")
            for row in body[start : start + CSV_ROWS_PER_SECTION]
        ]
        sections.append(Section("\n".join(line for line in lines if line), {"rows": f"{start + 1}-{start + len(lines)}"}))
    return sections or [Section(", ".join(header))]


def read_json(data: bytes) -> list[Section]:
    try:
        value = json.loads(_decode(data))
    except json.JSONDecodeError as exc:
        raise ReadError(f"The JSON is not valid: {exc}") from None
    items = value if isinstance(value, list) else [value]
    return [Section(json.dumps(item, ensure_ascii=False, indent=1), {"item": number}) for number, item in enumerate(items)]


@dataclass(frozen=True)
class Reader:
    id: str
    name: str
    description: str
    read: Callable[[bytes], list[Section]]
    mime_types: tuple[str, ...]
    extensions: tuple[str, ...]
    chunker: str  # the chunker it is split with by default


READERS: dict[str, Reader] = {
    reader.id: reader
    for reader in (
        Reader("text", "Text", "Plain text", read_text, ("text/plain",), (".txt", ".text", ".log", ".rst"), "recursive"),
        Reader("markdown", "Markdown", "Markdown, split at its headings", read_text, ("text/markdown", "text/x-markdown"), (".md", ".markdown"), "markdown"),
        Reader("html", "HTML", "A web page's visible text", read_html, ("text/html", "application/xhtml+xml"), (".html", ".htm"), "recursive"),
        Reader("pdf", "PDF", "A PDF's text layer, page by page (pypdf)", read_pdf, ("application/pdf",), (".pdf",), "recursive"),
        Reader(
            "docx", "Word", "A Word document's paragraphs and tables (python-docx)", read_docx,
            ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",), (".docx",), "markdown",
        ),
        Reader("csv", "CSV", "Rows as 'column: value' lines", read_csv, ("text/csv", "application/csv"), (".csv", ".tsv"), "recursive"),
        Reader("json", "JSON", "A JSON document, or each item of a JSON list", read_json, ("application/json",), (".json",), "recursive"),
    )
}


def reader_for(*, reader_id: str = "", mime_type: str = "", file_name: str = "") -> Reader:
    if reader_id:
        reader = READERS.get(reader_id)
        if reader is None:
            raise ReadError(f"Unknown reader {reader_id!r}; readers: {', '.join(READERS)}")
        return reader
    media = (mime_type or "").split(";")[0].strip().lower()
    for reader in READERS.values():
        if media in reader.mime_types:
            return reader
    suffix = ("." + file_name.rsplit(".", 1)[-1].lower()) if "." in (file_name or "") else ""
    for reader in READERS.values():
        if suffix in reader.extensions:
            return reader
    guessed = mimetypes.guess_type(file_name or "")[0]
    if guessed and guessed != media:
        return reader_for(mime_type=guessed)
    what = media or suffix or "unknown"
    raise ReadError(f"Unsupported content type ({what}); supported: text, Markdown, HTML, PDF, DOCX, CSV and JSON")
