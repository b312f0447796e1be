"""Readers turn real files into text; chunkers keep every chunk inside the embedder's window."""
from __future__ import annotations

import json

import pytest

from knowledge.chunkers import ChunkerError, chunk_fixed, chunk_markdown, chunk_recursive, chunk_sections
from knowledge.readers import ReadError, ReadLimits, read_content, reader_for
from tests.knowledge.conftest import docx_bomb, docx_bytes, pdf_bytes


def test_a_pdf_is_read_page_by_page():
    sections = reader_for(file_name="report.pdf").read(pdf_bytes(["Quarterly revenue grew.", "Costs fell sharply."]))
    assert [(s.text.strip(), s.metadata) for s in sections] == [("Quarterly revenue grew.", {"page": 1}), ("Costs fell sharply.", {"page": 2})]


def test_a_broken_or_textless_pdf_says_why():
    with pytest.raises(ReadError, match="could not be read"):
        reader_for(mime_type="application/pdf").read(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(ReadError, match="no text layer"):
        reader_for(mime_type="application/pdf").read(pdf_bytes([""]))


def test_a_docx_keeps_headings_paragraphs_and_tables():
    data = docx_bytes("Travel policy", ["Book trains for trips under four hours."], [["city", "allowance"], ["Paris", "120"]])
    [section] = reader_for(file_name="policy.docx").read(data)
    assert section.text == "# Travel policy\n\nBook trains for trips under four hours.\n\ncity | allowance\n\nParis | 120"
    with pytest.raises(ReadError, match="docx"):
        reader_for(file_name="old.docx").read(b"PK not a zip at all")


def test_html_keeps_the_visible_text_only():
    html = b"<html><head><title>T</title><style>p{}</style></head><body><script>evil()</script><h1>Hello</h1><p>world  here</p></body></html>"
    [section] = reader_for(mime_type="text/html; charset=utf-8").read(html)
    assert section.text == "Hello\nworld here"


def test_csv_rows_become_labelled_lines_and_json_items_sections():
    [section] = reader_for(file_name="people.csv").read(b"name,city\nAda,London\nAlan,Wilmslow\n")
    assert section.text == "name: Ada, city: London\nname: Alan, city: Wilmslow"
    sections = reader_for(mime_type="application/json").read(json.dumps([{"a": 1}, {"b": 2}]).encode())
    assert [s.metadata for s in sections] == [{"item": 0}, {"item": 1}]
    with pytest.raises(ReadError, match="not valid"):
        reader_for(file_name="x.json").read(b"{nope")


def test_an_unknown_type_is_refused_with_the_supported_list():
    with pytest.raises(ReadError, match=r"Unsupported content type \(application/zip\).*PDF, DOCX"):
        reader_for(mime_type="application/zip", file_name="archive.zip")


TEXT = " ".join(f"Sentence number {n} says something about topic {n % 7}." for n in range(200))


@pytest.mark.parametrize("split", [chunk_fixed, chunk_recursive])
def test_chunks_stay_within_the_size_and_overlap(split):
    chunks = split(TEXT, 300, 50)
    assert all(len(chunk) <= 300 for chunk in chunks)
    assert len(chunks) > len(TEXT) // 300
    # consecutive chunks share text (the overlap), and together they cover every sentence
    assert all(set(a.split()[-3:]) & set(b.split()[:12]) for a, b in zip(chunks, chunks[1:]))
    assert all(f"number {n} " in " ".join(chunks) for n in range(200))


def test_recursive_chunks_break_at_paragraphs_first():
    text = "First paragraph about cats.\n\nSecond paragraph about dogs.\n\n" + "x " * 40
    chunks = chunk_recursive(text, 50, 0)
    assert chunks[0] == "First paragraph about cats."  # the paragraph break, not the 50th character
    assert chunks[1].startswith("Second paragraph about dogs.\n\nx x")
    assert all(len(chunk) <= 50 for chunk in chunks)


def test_markdown_chunks_carry_their_heading_path():
    text = "# Guide\nIntro.\n## Install\nRun pip.\n```\n# not a heading\n```\n## Use\nCall it."
    assert chunk_markdown(text, 200, 0) == [
        ("# Guide\nIntro.", ["Guide"]),
        ("## Install\nRun pip.\n```\n# not a heading\n```", ["Guide", "Install"]),
        ("## Use\nCall it.", ["Guide", "Use"]),
    ]


def test_bad_chunk_settings_are_refused():
    with pytest.raises(ChunkerError):
        chunk_recursive("text", 100, 100)
    with pytest.raises(ChunkerError, match="Unknown chunker"):
        chunk_sections([], chunker="semantic", size=100, overlap=0)


def test_a_docx_bomb_is_refused_before_it_is_inflated():
    bomb = docx_bomb("The only real sentence.", padding=4_000_000)
    assert len(bomb) < 50_000  # 4 MB inside 40 KB (python-docx's template, a thumbnail included, is 36 KB of it)
    docx = reader_for(file_name="bomb.docx")
    with pytest.raises(ReadError, match=r"The Word document unpacks to 4,\d{3},\d{3} bytes; at most 1,000,000 are read \(KNOWLEDGE_MAX_UNPACKED_BYTES\)"):
        read_content(docx, bomb, ReadLimits(unpacked_bytes=1_000_000))
    # under that bound, its 666,667 empty paragraphs (python-docx's tens of microseconds each) are
    with pytest.raises(ReadError, match="The Word document has 666,668 paragraphs and table cells; at most 100,000 are read"):
        read_content(docx, bomb, ReadLimits(unpacked_bytes=5_000_000))
    small = docx_bomb("The only real sentence.", padding=60_000)
    [section] = read_content(docx, small, ReadLimits(unpacked_bytes=1_000_000))  # within both bounds: read
    assert section.text == "# Bomb\n\nThe only real sentence."


def test_a_docx_member_larger_than_it_declares_is_not_inflated_past_its_declared_size():
    liar = docx_bomb("The only real sentence.", padding=4_000_000, declared=50_000)
    with pytest.raises(ReadError, match="could not be read.*CRC"):
        read_content(reader_for(file_name="liar.docx"), liar, ReadLimits(unpacked_bytes=1_000_000))


def test_a_pdf_stream_that_inflates_past_the_bound_is_refused():
    bomb = pdf_bytes(["Quarterly revenue grew."], padding=3_000_000)
    assert len(bomb) < 20_000
    pdf = reader_for(file_name="bomb.pdf")
    with pytest.raises(ReadError, match=r"The PDF inflates past what is read .*KNOWLEDGE_MAX_UNPACKED_BYTES"):
        read_content(pdf, bomb, ReadLimits(unpacked_bytes=1_000_000))
    [section] = read_content(pdf, bomb, ReadLimits(unpacked_bytes=4_000_000))
    assert section.text.strip() == "Quarterly revenue grew."


def test_pypdfs_own_limits_stay_on_and_are_lowered_to_ours():
    from pypdf import get_configuration

    from knowledge.readers import PDF_OUTPUT_LIMITS, _pdf_configuration

    pypdf_own = get_configuration()
    assert all(getattr(pypdf_own, name) > 0 for name in PDF_OUTPUT_LIMITS if hasattr(pypdf_own, name))
    ours = _pdf_configuration(ReadLimits(unpacked_bytes=1_000))
    assert {getattr(ours, name) for name in PDF_OUTPUT_LIMITS if hasattr(ours, name)} == {1_000}
    generous = _pdf_configuration(ReadLimits(unpacked_bytes=10**12))  # never raised past pypdf's
    assert all(getattr(generous, name) == getattr(pypdf_own, name) for name in PDF_OUTPUT_LIMITS if hasattr(ours, name))


@pytest.mark.parametrize(
    "file_name, data",
    [
        ("long.txt", ("word " * 100).encode()),
        ("long.pdf", pdf_bytes(["word " * 30, "word " * 30, "word " * 30])),
        ("long.docx", docx_bytes("Long", ["word " * 30] * 4)),
    ],
)
def test_text_past_the_bound_stops_the_reading(file_name, data):
    with pytest.raises(ReadError, match=r"The content's text is longer than 200 characters \(KNOWLEDGE_MAX_TEXT_CHARS\)"):
        read_content(reader_for(file_name=file_name), data, ReadLimits(text_chars=200))
