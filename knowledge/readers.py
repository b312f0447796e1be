"""Readers: a content's bytes to text sections (a page of a PDF, a row block of a CSV, a document).

The reader is chosen by ``reader_id`` when given, else by the MIME type, else by the file name's
extension. A type no reader knows, a file a reader cannot parse, or one with no text at all
raises ``ReadError`` with a sentence the user can act on; the content then ends ``failed``.

Reading is bounded whatever the content's size on the wire (``ReadLimits``): a compressed
document may inflate a thousandfold. A DOCX's members are measured before any is opened (the
sizes its zip directory declares, which ``zipfile`` holds each member to while inflating, the
CRC refusing a member that lies); a PDF's streams inflate within pypdf's own limits, lowered to
ours; and the text extracted is counted as it grows, so reading stops at the bound.
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


@dataclass(frozen=True)
class ReadLimits:
    """What reading one content may cost (the settings' names are in the failure reasons)."""

    unpacked_bytes: int = 32 * 1024 * 1024  # KNOWLEDGE_MAX_UNPACKED_BYTES
    text_chars: int = 1_000_000  # KNOWLEDGE_MAX_TEXT_CHARS


DEFAULT_LIMITS = ReadLimits()
# No DOCX has this many parts (a few dozen is usual); a directory of more is refused unread.
MAX_ARCHIVE_MEMBERS = 10_000
# Paragraphs and table cells a DOCX reading visits (a 1,000-page book has about 30,000).
MAX_DOCX_BLOCKS = 100_000


class _TextBudget:
    """The characters of text a reading may still extract; past the bound it stops."""

    def __init__(self, limits: ReadLimits) -> None:
        self.limit = limits.text_chars
        self.used = 0

    def take(self, text: str) -> str:
        self.used += len(text)
        if self.used > self.limit:
            raise ReadError(f"The content's text is longer than {self.limit:,} characters (KNOWLEDGE_MAX_TEXT_CHARS)")
        return text


def check_archive(data: bytes, limits: ReadLimits, what: str) -> None:
    """Refuse a zip whose members would inflate past ``limits.unpacked_bytes`` all together,
    before any is opened. The declared sizes are what counts: ``zipfile`` never inflates a member
    past its declared size, and a member that lies fails its CRC."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # not a zip: zipfile.BadZipFile, the caller's to word
        members = archive.infolist()
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise ReadError(f"{what} has {len(members):,} parts; at most {MAX_ARCHIVE_MEMBERS:,} are read")
    total = sum(member.file_size for member in members)
    if total > limits.unpacked_bytes:
        raise ReadError(
            f"{what} unpacks to {total:,} bytes; at most {limits.unpacked_bytes:,} are read (KNOWLEDGE_MAX_UNPACKED_BYTES)"
        )


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


def read_text(data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
    return [Section(_decode(data))]


def read_html(data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_decode(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "svg", "head"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else ""
    text = soup.get_text("\n")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    body = "\n".join(line for line in lines if line)
    return [Section(body, {"title": title} if title else {})]


# pypdf's bounds on what one stream may inflate to (each 75 MB in pypdf 7): lowered to
# ReadLimits.unpacked_bytes when that is smaller, never raised nor switched off.
PDF_OUTPUT_LIMITS = (
    "maximum_declared_stream_length", "array_based_stream_maximum_output_length", "jbig2_maximum_output_length",
    "lzw_maximum_output_length", "run_length_maximum_output_length", "zlib_maximum_output_length",
    "brotli_maximum_output_length", "image_maximum_buffer_size",
)


def _pdf_configuration(limits: ReadLimits) -> Any:
    from pypdf import get_configuration

    current = get_configuration()
    return current.with_overwrites(
        **{name: min(getattr(current, name), limits.unpacked_bytes) for name in PDF_OUTPUT_LIMITS if hasattr(current, name)}
    )


def read_pdf(data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError, PdfReadError

    budget = _TextBudget(limits)
    try:
        with apply_configuration(_pdf_configuration(limits)):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise ReadError("The PDF is encrypted; upload a copy without a password")
            sections = []
            for number, page in enumerate(reader.pages, start=1):
                text = budget.take(page.extract_text() or "")
                if text.strip():
                    sections.append(Section(text, {"page": number}))
    except ReadError:
        raise
    except LimitReachedError as exc:
        raise ReadError(
            f"The PDF inflates past what is read ({exc}; at most {limits.unpacked_bytes:,} bytes a stream, KNOWLEDGE_MAX_UNPACKED_BYTES)"
        ) from None
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ReadError(f"The PDF could not be read ({exc}); is it a valid PDF file?") from None
    if not sections:
        raise ReadError("The PDF has no text layer (a scanned document?); text recognition (OCR) is not supported")
    return sections


def read_docx(data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
    import zipfile

    import docx

    what = "The Word document"
    try:
        check_archive(data, limits, what)
        document = docx.Document(io.BytesIO(data))
    except ReadError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ReadError(f"{what} could not be read ({exc}); is it a .docx file (not .doc)?") from None
    # Each paragraph and cell costs python-docx tens of microseconds, text or not, so their number
    # is bounded too (counted in lxml, before any is visited): 4 MB of empty paragraphs are 700,000.
    blocks = int(document.element.body.xpath("count(./w:p) + count(.//w:tc)"))
    if blocks > MAX_DOCX_BLOCKS:
        raise ReadError(f"{what} has {blocks:,} paragraphs and table cells; at most {MAX_DOCX_BLOCKS:,} are read")
    budget = _TextBudget(limits)
    styles: dict[str | None, str] = {}  # a style's lookup walks every style: once per style, not per paragraph
    lines: list[str] = []
    for paragraph in document.paragraphs:
        text = budget.take(paragraph.text.strip())
        if not text:
            continue
        style_id = paragraph._p.style
        if style_id not in styles:
            styles[style_id] = (paragraph.style.name or "") if paragraph.style is not None else ""
        style = styles[style_id]
        if style.startswith("Heading"):
            level = "".join(ch for ch in style if ch.isdigit()) or "1"
            text = "#" * min(6, int(level)) + " " + text  # headings kept as Markdown for the Markdown chunker
        lines.append(text)
    for table in document.tables:
        for row in table.rows:
            cells = [budget.take(cell.text.strip()) for cell in row.cells]
            if any(cells):
                lines.append(" | ".join(cells))
    return [Section("\n\n".join(lines))]


CSV_ROWS_PER_SECTION = 20


def read_csv(data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
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


def read_json(data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
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
    read: Callable[[bytes, ReadLimits], list[Section]]
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


_ONE_PAGE = "not offered here: a url content is one page, fetched by this server and read by its type"
# AgentOS's other readers (its ReaderFactory's ids, with their names), which this server does not
# offer, and why: /knowledge/config lists them as unavailable, and a content naming one is refused.
NOT_OFFERED: dict[str, tuple[str, str]] = {
    "website": ("WebsiteReader", f"{_ONE_PAGE}; no site is crawled"),
    "sitemap": ("SitemapReader", f"{_ONE_PAGE}; a sitemap's pages are not followed"),
    "llms_txt": ("LLMsTxtReader", f"{_ONE_PAGE}; the pages an llms.txt links to are not followed"),
    "firecrawl": ("FirecrawlReader", f"{_ONE_PAGE}, not through Firecrawl"),
    "tavily": ("TavilyReader", f"{_ONE_PAGE}, not through Tavily"),
    "web_search": ("WebSearchReader", "not offered here: the web is not searched; a content is what its owner adds"),
    "youtube": ("YouTubeReader", "not offered here: video transcripts are not read"),
    "arxiv": ("ArxivReader", "not offered here: add a paper by the URL of its PDF"),
    "wikipedia": ("WikipediaReader", "not offered here: add an article by its URL"),
    "docling": ("DoclingReader", "not offered here: PDF, DOCX, HTML, Markdown, CSV and JSON have readers of their own; slides, images and audio are not read"),
    "excel": ("ExcelReader", "not offered here: a spreadsheet is read as CSV (export its sheet)"),
    "pptx": ("PptxReader", "not offered here: slides are not read (export them as PDF)"),
    "field_labeled_csv": ("FieldLabeledCsvReader", "not offered here: the csv reader already writes each row as 'column: value' lines"),
}


def check_reader_id(reader_id: str) -> None:
    """``ReadError`` saying why for a reader id this server does not offer."""
    if reader_id in READERS:
        return
    if reader_id in NOT_OFFERED:
        raise ReadError(f"Reader {reader_id!r} is {NOT_OFFERED[reader_id][1]}")
    raise ReadError(f"Unknown reader {reader_id!r}; readers: {', '.join(READERS)}")


def read_content(reader: Reader, data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> list[Section]:
    """``reader``'s sections of ``data`` within ``limits``: the bounds its reading keeps, and the
    text of every reader counted against ``limits.text_chars``."""
    sections = reader.read(data, limits)
    budget = _TextBudget(limits)
    for section in sections:
        budget.take(section.text)
    return sections


def reader_for(*, reader_id: str = "", mime_type: str = "", file_name: str = "") -> Reader:
    if reader_id:
        check_reader_id(reader_id)
        return READERS[reader_id]
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
