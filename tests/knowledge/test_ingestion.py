"""Contents go in through a background job: read, chunk, embed, write; completed or failed."""
from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jobs.models import Job, JobStatus
from knowledge.models import Chunk, Content, ContentStatus
from knowledge.services import (
    ContentInputError, content_delete, content_get_for_user, content_insert, content_refresh, content_update, knowledge_search,
)
from tests.knowledge.conftest import docx_bomb, docx_bytes, ingest, pdf_bytes

pytestmark = pytest.mark.django_db(transaction=True)


def _chunks(content_id: str) -> list[Chunk]:
    return list(Chunk.all_users.filter(content_id=content_id).order_by("index"))


def _content(content_id: str) -> Content:
    return Content.all_users.get(pk=content_id)


def test_a_text_is_processing_until_its_job_has_chunked_and_embedded_it(shared_base):
    text = "\n\n".join(f"Paragraph {n}: the office opens at {n} o'clock and the coffee machine is on floor {n}." for n in range(30))
    inserted = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text=text, name="office.txt", metadata={"team": "ops"})
    content = inserted.content
    assert (content.status, inserted.duplicate, content.size) == (ContentStatus.PROCESSING, False, len(text.encode()))
    assert _chunks(content.pk) == []
    job = Job.objects.unscoped("test").get(pk=content.job_id)
    assert (job.job_type, job.user_id, job.status) == ("knowledge-ingest", "alice", JobStatus.QUEUED)

    assert ingest() == ["COMPLETED"]
    done = _content(content.pk)
    chunks = _chunks(content.pk)
    assert (done.status, done.status_message, done.embedder_id, done.chunk_count) == (ContentStatus.COMPLETED, "", "minilm", len(chunks))
    assert len(chunks) >= 3 and all(len(chunk.text) <= 800 for chunk in chunks)
    assert {(c.user_id, c.base_id, c.embedder_id, c.dimensions, len(c.embedding)) for c in chunks} == {("alice", shared_base.pk, "minilm", 384, 384)}
    assert all(chunk.metadata == {"team": "ops"} for chunk in chunks)
    progress = Job.objects.unscoped("test").get(pk=content.job_id).progress
    assert progress == {"stage": "writing", "chunks": len(chunks), "embedded": len(chunks)}


def test_pdf_and_docx_uploads_are_searchable_with_their_pages(shared_base):
    pdf = content_insert(
        user_id="alice", base_id=shared_base.pk, source_type="upload", file_name="handbook.pdf", mime_type="application/pdf",
        data=pdf_bytes(["Employees get twenty five days of paid holiday.", "The parking garage closes at midnight."]),
    ).content
    doc = content_insert(
        user_id="alice", base_id=shared_base.pk, source_type="upload", file_name="travel.docx",
        data=docx_bytes("Travel", ["Book trains for trips shorter than four hours."]),
    ).content
    assert ingest() == ["COMPLETED", "COMPLETED"]
    assert [c.metadata for c in _chunks(pdf.pk)] == [{"page": 1}, {"page": 2}]
    [hit] = knowledge_search(user="alice", base_id=shared_base.pk, query="How much vacation do staff have?", limit=1)
    assert (hit.content_id, hit.metadata, hit.origin) == (pdf.pk, {"page": 1}, "handbook.pdf")
    [hit] = knowledge_search(user="alice", base_id=shared_base.pk, query="rail journeys", limit=1)
    assert hit.content_id == doc.pk and hit.metadata == {"headings": ["Travel"]}


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"data": b"PK\x03\x04 zip bytes", "file_name": "archive.zip", "mime_type": "application/zip"}, "Unsupported content type (application/zip)"),
        ({"data": b"%PDF-1.4 garbage", "file_name": "broken.pdf"}, "The PDF could not be read"),
        ({"data": b"   \n  ", "file_name": "empty.txt"}, "The content has no text to index"),
    ],
    ids=["unknown-type", "unreadable-pdf", "empty"],
)
def test_bad_input_ends_failed_with_a_reason_and_nothing_searchable(shared_base, fields, reason):
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="upload", **fields).content
    assert ingest() == ["ERROR"]
    failed = _content(content.pk)
    assert failed.status == ContentStatus.FAILED and failed.status_message.startswith(reason)
    assert _chunks(content.pk) == []
    assert Job.objects.unscoped("test").get(pk=content.job_id).error.startswith(reason)


def test_an_oversized_content_fails_at_once_and_is_not_stored(shared_base, settings):
    settings.KNOWLEDGE_MAX_CONTENT_BYTES = 100
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="x" * 101).content
    failed = _content(content.pk)
    assert (failed.status, failed.status_message, failed.data, failed.job_id) == (
        ContentStatus.FAILED, "The content is 101 bytes; the limit is 100 (KNOWLEDGE_MAX_CONTENT_BYTES)", None, "",
    )
    assert ingest() == []


def test_bad_options_are_refused_before_anything_is_written(shared_base):
    for options, message in (({"chunker": "semantic"}, "Unknown chunker"), ({"chunk_size": 10}, "chunk_size"), ({"metadata": [1]}, "metadata")):
        with pytest.raises(ContentInputError, match=message):
            content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="hello", **options)
    assert Content.all_users.count() == 0


def test_the_same_bytes_in_the_same_base_are_not_embedded_twice(shared_base):
    first = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="The cafeteria serves soup on Fridays.").content
    again = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="The cafeteria serves soup on Fridays.")
    assert (again.duplicate, again.content.pk) == (True, first.pk)
    # another user's copy is theirs (isolation), so it is a content of its own
    bobs = content_insert(user_id="bob", base_id=shared_base.pk, source_type="text", text="The cafeteria serves soup on Fridays.")
    assert bobs.duplicate is False and bobs.content.pk != first.pk
    assert ingest() == ["COMPLETED", "COMPLETED"]
    assert Content.all_users.count() == 2


def test_a_refresh_replaces_the_chunks_in_one_step(shared_base, settings):
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="Alpha beta gamma. " * 100).content
    ingest()
    before = {chunk.pk for chunk in _chunks(content.pk)}
    content_update(user="alice", content_id=content.pk, metadata={"v": 2})
    assert {chunk.metadata["v"] for chunk in _chunks(content.pk)} == {2}  # new metadata reaches the chunks at once
    refreshed = content_refresh(user="alice", content_id=content.pk)
    assert refreshed.status == ContentStatus.PROCESSING
    assert {chunk.pk for chunk in _chunks(content.pk)} == before  # still searchable meanwhile
    assert content_refresh(user="alice", content_id=content.pk).job_id == refreshed.job_id  # already queued: left to it
    ingest()
    after = _chunks(content.pk)
    assert before.isdisjoint({chunk.pk for chunk in after}) and len(after) == len(before)
    assert _content(content.pk).status == ContentStatus.COMPLETED


def test_an_outsider_cannot_refresh_update_delete_or_read_a_content(shared_base):
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="private notes").content
    ingest()
    for action in (
        lambda: content_refresh(user="bob", content_id=content.pk),
        lambda: content_update(user="bob", content_id=content.pk, name="mine now"),
        lambda: content_delete(user="bob", content_id=content.pk),
        lambda: content_get_for_user(user="bob", content_id=content.pk),
    ):
        with pytest.raises(Content.DoesNotExist):
            action()
    assert _content(content.pk).name == "text" and len(_chunks(content.pk)) == 1
    content_delete(user="alice", content_id=content.pk)
    assert _chunks(content.pk) == [] and not Content.all_users.filter(pk=content.pk).exists()


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body><h1>Opening hours</h1><p>The library opens at nine.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hours"
    server.shutdown()
    server.server_close()


def test_a_url_on_the_private_network_is_refused_by_the_ssrf_guard(shared_base, local_site):
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="url", url=local_site).content
    assert ingest() == ["ERROR"]
    failed = _content(content.pk)
    assert failed.status == ContentStatus.FAILED
    assert failed.status_message.startswith("Refusing to fetch 127.0.0.1: it resolves to 127.0.0.1 (loopback address)")


def test_a_url_is_fetched_read_and_indexed_when_its_host_is_allowed(shared_base, local_site, settings):
    settings.HTTP_FETCH_ALLOW_HOSTS = ["127.0.0.1"]
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="url", url=local_site).content
    assert ingest() == ["COMPLETED"]
    done = _content(content.pk)
    assert (done.mime_type, done.chunk_count) == ("text/html", 1)
    assert [c.text for c in _chunks(content.pk)] == ["Opening hours\nThe library opens at nine."]
    # the same page added again is found by its hash once fetched, and its vectors are copied
    twin = content_insert(user_id="alice", base_id=shared_base.pk, source_type="url", url=local_site + "?again").content
    assert ingest() == ["COMPLETED"]
    progress = Job.objects.unscoped("test").get(pk=_content(twin.pk).job_id).progress
    assert progress["reused_from_duplicate"] is True
    assert [c.embedding for c in _chunks(twin.pk)] == [c.embedding for c in _chunks(content.pk)]


def test_a_url_over_the_size_limit_fails(shared_base, local_site, settings):
    settings.HTTP_FETCH_ALLOW_HOSTS = ["127.0.0.1"]
    settings.KNOWLEDGE_MAX_CONTENT_BYTES = 20
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="url", url=local_site).content
    ingest()
    assert _content(content.pk).status_message == "The URL's content is larger than 20 bytes (KNOWLEDGE_MAX_CONTENT_BYTES)"


def test_the_embedded_worker_ingests_in_the_background(shared_base, settings, worker):
    from tests.knowledge.conftest import wait_for

    settings.EMBEDDED_WORKER = True
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="Background ingestion works.").content
    wait_for(lambda: _content(content.pk).status == ContentStatus.COMPLETED)
    assert len(_chunks(content.pk)) == 1


def test_a_content_whose_job_was_lost_for_good_reads_failed_with_the_jobs_reason(shared_base):
    from jobs.services.jobs import job_cancel
    from knowledge.services import content_list_for_user

    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="never ingested").content
    job_cancel(job_id=content.job_id, reason="cancelled by an operator")
    assert _content(content.pk).status == ContentStatus.PROCESSING
    [listed], total = content_list_for_user(user="alice", base_id=shared_base.pk)
    assert (total, listed.status, listed.status_message) == (1, ContentStatus.FAILED, "Ingestion was cancelled")
    assert content_get_for_user(user="alice", content_id=content.pk).status == ContentStatus.FAILED
    assert content_list_for_user(user="bob", base_id=shared_base.pk) == ([], 0)
    # and it can be refreshed
    assert content_refresh(user="alice", content_id=content.pk).status == ContentStatus.PROCESSING
    assert ingest() == ["COMPLETED"]


def test_status_and_config_for_a_client(shared_base):
    from knowledge.services import content_status_for_user, knowledge_config

    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="Status please.", metadata={"team": "ops"}).content
    content_insert(user_id="bob", base_id=shared_base.pk, source_type="text", text="Bob's.", metadata={"secret_key_name": 1})
    assert content_status_for_user(user="alice", content_id=content.pk) == {"id": content.pk, "status": "processing", "status_message": "", "progress": {}}
    ingest()
    status = content_status_for_user(user="alice", content_id=content.pk)
    assert (status["status"], status["progress"]["stage"], status["progress"]["embedded"]) == ("completed", "writing", 1)
    with pytest.raises(Content.DoesNotExist):
        content_status_for_user(user="bob", content_id=content.pk)
    config = knowledge_config(user="alice", base_id=shared_base.pk)
    assert config["filters"] == ["team"]  # not bob's keys
    assert set(config["readers"]) == {"text", "markdown", "html", "pdf", "docx", "csv", "json"}
    assert config["readers"]["pdf"]["content_types"] == ["application/pdf"] and config["readersForType"][".docx"] == ["docx"]
    assert set(config["chunkers"]) == {"FixedSizeChunker", "RecursiveChunker", "MarkdownChunker"}
    assert config["vector_dbs"][0]["search_types"] == ["vector", "keyword", "hybrid"]


def test_deleting_a_content_cancels_its_queued_ingestion(shared_base):
    from knowledge.services import content_delete_all

    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="deleted before it was read").content
    others = [content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text=f"bulk {n}").content for n in range(2)]
    content_delete(user="alice", content_id=content.pk)
    assert content_delete_all(user="alice", base_id=shared_base.pk) == 2
    jobs = Job.objects.unscoped("test").filter(pk__in=[content.job_id] + [other.job_id for other in others])
    assert sorted(jobs.values_list("status", flat=True)) == [JobStatus.CANCELLED] * 3
    assert ingest() == []


class _DeletedWhileFetched(BaseHTTPRequestHandler):
    """A page whose fetch deletes the content being ingested, as a user would mid-ingestion."""

    content_id = ""

    def do_GET(self):
        from django.db import connection

        try:
            content_delete(user="alice", content_id=type(self).content_id)
        finally:
            connection.close()
        body = b"<html><body>" + b"<p>A long page that would take a while to embed.</p>" * 200 + b"</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_deleting_a_content_stops_its_running_ingestion(shared_base, settings):
    settings.HTTP_FETCH_ALLOW_HOSTS = ["127.0.0.1"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DeletedWhileFetched)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/page"
        content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="url", url=url).content
        _DeletedWhileFetched.content_id = content.pk
        assert ingest() == ["CANCELLED"]  # stopped before embedding, not run to a void end
    finally:
        server.shutdown()
        server.server_close()
    job = Job.objects.unscoped("test").get(pk=content.job_id)
    assert (job.status, job.progress.get("stage")) == (JobStatus.CANCELLED, "reading")
    assert Chunk.all_users.count() == 0


def test_nul_bytes_in_a_file_are_dropped_from_its_text(shared_base):
    data = b"The boiler room key hangs\x00 by the door.\x00\n\nAsk the caretaker\x00 for it."
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="upload", file_name="keys.txt", data=data).content
    assert ingest() == ["COMPLETED"]  # PostgreSQL refuses NUL in text: once a lost worker, 70 s later
    assert [chunk.text for chunk in _chunks(content.pk)] == ["The boiler room key hangs by the door.\n\nAsk the caretaker for it."]


def test_a_value_the_database_refuses_fails_the_content_with_the_reason(shared_base, monkeypatch):
    from knowledge.readers import READERS, Reader, Section

    # A reader (a plug-in, say) whose metadata holds a number no JSON column stores.
    def read(data: bytes, limits: object) -> list[Section]:
        return [Section(data.decode(), {"score": float("nan")})]

    monkeypatch.setitem(READERS, "scored", Reader("scored", "Scored", "test reader", read, (), (".scored",), "recursive"))
    content = content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", text="A scored note.", reader_id="scored").content
    assert ingest() == ["ERROR"]  # not a lost worker for the reaper to find much later
    failed = _content(content.pk)
    assert failed.status == ContentStatus.FAILED
    assert failed.status_message.startswith("The database refused this content's data (")
    assert Job.objects.unscoped("test").get(pk=content.job_id).error == failed.status_message
    assert _chunks(content.pk) == []


def test_the_service_refuses_what_the_database_cannot_store(shared_base):
    for fields, message in (
        ({"text": "ok", "metadata": {"a": ["\x00"]}}, "metadata must not contain NUL"),
        ({"text": "ok", "metadata": {"a": float("inf")}}, "metadata numbers must be finite"),
        ({"text": "ok", "name": "n" * 501}, "name must be at most 500 characters"),
        ({"text": "a\x00b"}, "text must not contain NUL"),
    ):
        with pytest.raises(ContentInputError, match=message):
            content_insert(user_id="alice", base_id=shared_base.pk, source_type="text", **fields)
    assert Content.all_users.count() == 0


@pytest.mark.parametrize(
    ("setting", "fields", "reason"),
    [
        (
            {"KNOWLEDGE_MAX_UNPACKED_BYTES": 1_000_000},
            {"source_type": "upload", "file_name": "bomb.docx", "data": docx_bomb("The only real sentence.", padding=4_000_000)},
            r"The Word document unpacks to 4,\d{3},\d{3} bytes; at most 1,000,000 are read \(KNOWLEDGE_MAX_UNPACKED_BYTES\)",
        ),
        (
            {"KNOWLEDGE_MAX_TEXT_CHARS": 1_000},
            {"source_type": "text", "text": "All work and no play makes Jack a dull boy. " * 30},
            r"The content's text is longer than 1,000 characters \(KNOWLEDGE_MAX_TEXT_CHARS\)",
        ),
        (
            {"KNOWLEDGE_MAX_CHUNKS": 3},
            {"source_type": "text", "text": "All work and no play makes Jack a dull boy. " * 60, "chunk_size": 100, "chunk_overlap": 0},
            r"The content makes 30 chunks; at most 3 are indexed per content \(KNOWLEDGE_MAX_CHUNKS\)",
        ),
    ],
    ids=["docx-bomb", "text", "chunks"],
)
def test_a_content_past_a_reading_bound_fails_with_the_bound_and_embeds_nothing(shared_base, settings, setting, fields, reason):
    for name, value in setting.items():
        setattr(settings, name, value)
    content = content_insert(user_id="alice", base_id=shared_base.pk, **fields).content
    assert ingest() == ["ERROR"]
    failed = _content(content.pk)
    assert failed.status == ContentStatus.FAILED and re.fullmatch(reason + ".*", failed.status_message), failed.status_message
    job = Job.objects.unscoped("test").get(pk=content.job_id)
    assert "embedded" not in job.progress and _chunks(content.pk) == []
