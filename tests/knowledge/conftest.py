"""Knowledge fixtures: bases, an ingestion driver, and small real PDF/DOCX files made here."""
from __future__ import annotations

import io
import zipfile
import zlib

import pytest

from jobs.services.claims import job_claim

from jobs.services.jobs import job_run
from knowledge.services import base_get_or_create
from tests.agents.conftest import wait_for, worker

__all__ = ["docx_bomb", "docx_bytes", "ingest", "pdf_bytes", "wait_for", "worker"]


@pytest.fixture(autouse=True)
def _jobs_run_by_the_test(settings):
    """Jobs run when the test says (``ingest``), one after another, in the test's thread."""
    settings.EMBEDDED_WORKER = False
    settings.AGENTOS_BACKGROUND_MAX_CONCURRENCY = 50
    settings.AGENTOS_BACKGROUND_MAX_PER_USER = 50


def ingest() -> list[str]:
    """Run every queued job (ingestions) to its end, as a worker would; their final statuses."""
    statuses = []
    while (job := job_claim(worker="test-worker")) is not None:
        statuses.append(job_run(job, "test-worker"))
    return statuses


@pytest.fixture
def shared_base(db):
    return base_get_or_create(name="docs", description="shared documents")


def pdf_bytes(pages: list[str], *, padding: int = 0) -> bytes:
    """A real PDF (Helvetica text on each page), written object by object with its xref table.
    ``padding``: that many spaces after each page's text, its content stream deflated (a stream
    that inflates a thousandfold)."""
    objects: list[bytes] = []
    count = len(pages)
    page_ids = [4 + 2 * index for index in range(count)]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % pid for pid in page_ids) + b"] /Count %d >>" % count)
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for index, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        stream = b"BT /F1 12 Tf 72 720 Td (" + escaped + b") Tj ET"
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_ids[index] + 1)
        )
        if padding:
            stream = zlib.compress(stream + b" " * padding, 9)
            objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
        else:
            objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def docx_bytes(heading: str, paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_bomb(text: str, *, padding: int, declared: int | None = None) -> bytes:
    """A small DOCX whose body inflates to ``padding`` bytes more than ``text``'s paragraph (empty
    paragraphs: a thousandfold compression). ``declared``: the size its zip directory states for
    the body instead of the true one (a member that lies)."""
    plain = docx_bytes("Bomb", [text])
    source = zipfile.ZipFile(io.BytesIO(plain))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for member in source.infolist():
            data = source.read(member.filename)
            if member.filename == "word/document.xml":
                data = data.replace(b"</w:body>", b"<w:p/>" * (padding // 6) + b"</w:body>")
            archive.writestr(member.filename, data)
    bomb = out.getvalue()
    if declared is None:
        return bomb
    name = b"word/document.xml"
    central = bomb.index(b"PK\x01\x02")  # the zip directory's first entry; 46 bytes, then its name
    while bomb[central + 46 : central + 46 + len(name)] != name:
        central = bomb.index(b"PK\x01\x02", central + 4)
    return bomb[: central + 24] + declared.to_bytes(4, "little") + bomb[central + 28 :]
