"""Readers turn real files into text; chunkers keep every chunk inside the embedder's window."""
from __future__ import annotations

import json

import pytest

from knowledge.chunkers import ChunkerError, chunk_fixed, chunk_markdown, chunk_recursive, chunk_sections
from knowledge.readers import ReadError, reader_for
from tests.knowledge.conftest import docx_bytes, pdf_bytes


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
