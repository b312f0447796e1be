"""Agno's own AgentOSClient against the /knowledge routes of a live server: every knowledge method,
with ingestion done by the server's embedded worker."""
from __future__ import annotations

import time

import pytest
from agno.client.os import AgentOSClient
from agno.media import File

from tests.api.test_agents_conformance import run

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_knowledge_method_of_the_client_works(live_api: str, settings, worker) -> None:
    settings.EMBEDDED_WORKER = True  # tests/knowledge run jobs by hand; this one runs them as a server does
    client = AgentOSClient(base_url=live_api, timeout=30)
    config = run(client.get_knowledge_config())
    assert "pdf" in config.readers and config.vector_dbs[0].search_types == ["vector", "keyword", "hybrid"]
    # AgentOS's chunkers and readers, each offered or unavailable with why (its UI greys those out).
    assert set(config.chunkers) == {"FixedSizeChunker", "RecursiveChunker", "MarkdownChunker"}
    assert set(config.unavailable_chunkers) == {"AgenticChunker", "CodeChunker", "DocumentChunker", "SemanticChunker", "RowChunker"}
    assert config.readers["text"].chunkers[0] == "RecursiveChunker" and config.unavailable_readers["pptx"].reason.startswith("Reader 'pptx' is not offered")

    note = run(client.upload_knowledge_content(
        name="kettle", text_content="Green tea is steeped at eighty degrees for two minutes.", metadata={"topic": "tea"},
        chunker="RecursiveChunker", chunk_size=400,
    ))
    upload = run(client.upload_knowledge_content(
        file=File(content=b"# Bikes\n\nOil the chain every few hundred kilometres.", filename="bikes.md", mime_type="text/markdown"),
    ))
    assert note.status.value == "processing" and upload.name == "bikes.md"

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        statuses = {run(client.get_knowledge_content_status(content.id)).status.value for content in (note, upload)}
        if statuses == {"completed"}:
            break
        time.sleep(0.2)
    assert statuses == {"completed"}

    listed = run(client.list_knowledge_content(limit=10))
    assert {item.id for item in listed.data} == {note.id, upload.id} and listed.meta.total_count == 2
    fetched = run(client.get_knowledge_content(note.id))
    assert (fetched.metadata, fetched.status_message) == ({"topic": "tea", "_agno": {"vectors_indexed": True}}, None)
    renamed = run(client.update_knowledge_content(note.id, name="tea notes", metadata={"topic": "drinks"}))
    assert renamed.name == "tea notes"

    found = run(client.search_knowledge("what temperature for green tea?", max_results=2))
    assert found.data[0].content_id == note.id and found.data[0].meta_data["topic"] == "drinks"
    filtered = run(client.search_knowledge("chain", filters={"topic": "drinks"}, search_type="keyword"))
    assert filtered.data == []

    assert run(client.delete_knowledge_content(upload.id)).id == upload.id
    assert run(client.delete_all_knowledge_content()) == "success"
    assert run(client.list_knowledge_content()).data == []
