"""The pages an answer's sources link to, without a browser: a document's passages with the cited
one marked, and a passage of a knowledge base held in code as its run recorded it; each for
its owner only (another user gets the same 404 as a missing one)."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from knowledge.models import Chunk
from knowledge.services import base_get_or_create, content_insert
from tests.factories import make_run
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

TEXT = "# Tea\n\nGreen tea is steeped at eighty degrees.\n\n# Bikes\n\n" + "A bicycle chain wants oil after rain. " * 30


@pytest.fixture(autouse=True)
def _jobs_run_by_the_test(settings):
    settings.EMBEDDED_WORKER = False


def login(client, username: str):
    user = get_user_model().objects.create_user(username=username, password="x-long-password")
    client.force_login(user)
    return user


def passages(html: str) -> list[tuple[str, bool, str]]:
    """(anchor, cited, text) of each passage on the page, in order."""
    found = re.findall(r'<li id="([^"]+)" class="passage( passage-cited)?"[^>]*>.*?<blockquote class="passage-text">(.*?)</blockquote>', html, re.S)
    return [(anchor, bool(cited), text) for anchor, cited, text in found]


@pytest.fixture
def tea(db):
    base = base_get_or_create(name="documents")
    content = content_insert(user_id="alice", base_id=base.pk, source_type="text", text=TEXT, name="tea-and-bikes.md", chunker="markdown", chunk_size=300).content
    assert ingest() == ["COMPLETED"]
    chunks = list(Chunk.objects.for_user("alice").filter(content_id=content.pk).order_by("index").values_list("id", "text"))
    assert len(chunks) >= 3
    return content, chunks


def test_a_document_page_lists_its_passages_in_order_and_marks_the_cited_one(client, tea):
    content, chunks = tea
    login(client, "alice")
    cited_id = chunks[1][0]
    response = client.get(f"/chat/documents/{content.pk}/?passage={cited_id}")
    assert response.status_code == 200
    html = response.content.decode()
    assert passages(html) == [(f"chunk-{chunk_id}", chunk_id == cited_id, text) for chunk_id, text in chunks]
    assert f'<li id="chunk-{cited_id}" class="passage passage-cited" aria-current="true">' in html
    assert f'href="#chunk-{cited_id}">go to it</a>' in html and "<h1>tea-and-bikes.md</h1>" in html
    assert 'href="/chat/documents/#document-' + content.pk + '"' in html
    # Without a cited passage it is the document, nothing marked.
    assert [cited for _, cited, _ in passages(client.get(f"/chat/documents/{content.pk}/").content.decode())] == [False] * len(chunks)


def test_another_users_document_is_a_404_like_a_missing_one(client, tea):
    content, chunks = tea
    login(client, "bob")
    theirs = client.get(f"/chat/documents/{content.pk}/?passage={chunks[0][0]}")
    missing = client.get("/chat/documents/no-such-content/")
    assert theirs.status_code == missing.status_code == 404
    assert "This passage is not one of yours, or it was deleted." in theirs.content.decode()
    assert chunks[0][1][:30] not in theirs.content.decode() and passages(theirs.content.decode()) == []


def test_a_shared_document_is_readable_by_every_user(client):
    base = base_get_or_create(name="documents")
    content = content_insert(user_id=None, base_id=base.pk, source_type="text", text="Shared: the office opens at nine.", name="office").content
    ingest()
    login(client, "bob")
    assert [text for _, _, text in passages(client.get(f"/chat/documents/{content.pk}/").content.decode())] == ["Shared: the office opens at nine."]


def test_the_pages_need_a_login(client, tea):
    content, _ = tea
    response = client.get(f"/chat/documents/{content.pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/chat/login/")


REFERENCES = [
    {"query": "launch code", "time": 0.01, "references": [
        {"content": "Alice's note: the launch code word is heron.", "name": "alice.md", "content_id": None, "chunk_id": "handbook:2", "score": 0.6, "meta_data": {}},
        {"content": "Background jobs are claimed with a lease.", "name": "jobs.md", "content_id": "c-jobs", "chunk_id": "handbook:0", "score": 0.4, "meta_data": {}},
    ]},
    {"query": "leases", "time": 0.01, "references": [
        {"content": "Background jobs are claimed with a lease.", "name": "jobs.md", "content_id": "c-jobs", "chunk_id": "handbook:0", "score": 0.7, "meta_data": {}},
        {"content": "Leases are reaped when a worker dies.", "name": "jobs.md", "content_id": "c-jobs", "chunk_id": "handbook:1", "score": 0.3, "meta_data": {}},
        "A plain string reference.",
    ]},
]


@pytest.fixture
def run(db):
    return make_run("alice", run_id="run-refs", status="COMPLETED", run_data={"references": REFERENCES})


def test_a_passage_without_a_stored_document_is_shown_from_its_runs_references(client, run):
    login(client, "alice")
    # The chat keeps the better-scored place of a passage two searches found (search 1, hit 0).
    response = client.get("/chat/runs/run-refs/sources/1/0/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>jobs.md</h1>" in html and f'href="/chat/s/{run.session_id}/">← Back to the conversation</a>' in html
    assert passages(html) == [
        ("ref-1-0", True, "Background jobs are claimed with a lease."),
        ("ref-1-1", False, "Leases are reaped when a worker dies."),
    ]
    # Its first place names the same passage.
    assert passages(client.get("/chat/runs/run-refs/sources/0/1/").content.decode())[0] == ("ref-0-1", True, "Background jobs are claimed with a lease.")
    plain = client.get("/chat/runs/run-refs/sources/1/2/").content.decode()
    assert passages(plain) == [("ref-1-2", True, "A plain string reference.")]


@pytest.mark.parametrize("path", ["/chat/runs/run-refs/sources/0/0/", "/chat/runs/run-refs/sources/5/0/", "/chat/runs/run-refs/sources/0/9/", "/chat/runs/no-run/sources/0/0/"])
def test_another_users_run_or_a_missing_place_is_a_404(client, run, path):
    login(client, "bob" if path.startswith("/chat/runs/run-refs/sources/0/0/") else "alice")
    response = client.get(path)
    assert response.status_code == 404
    assert "heron" not in response.content.decode()
