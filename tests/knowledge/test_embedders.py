"""Embedders: the packaged MiniLM (offline, semantic), an OpenAI-compatible endpoint, and moving a
base from one to the other while it stays searchable."""
from __future__ import annotations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from knowledge.embedders import EmbedderError, embedder_get
from knowledge.models import Chunk, Content, KnowledgeBase
from knowledge.services import base_get_or_create, content_insert, knowledge_search
from tests.fakes._base import Failure
from tests.knowledge.conftest import ingest


def test_the_default_embedder_is_minilm_offline_and_semantic():
    embedder = embedder_get("minilm")
    food, bread, stocks = np.array(embedder.embed(["A man is eating food.", "A man is eating a piece of bread.", "The stock market crashed today."]))
    assert embedder.dimensions == 384 and food.shape == (384,)
    assert np.linalg.norm(food) == pytest.approx(1.0, abs=1e-5)
    # the values all-MiniLM-L6-v2 (sentence-transformers, fp32) gives: 0.755 and 0.009
    assert float(food @ bread) == pytest.approx(0.75, abs=0.02)
    assert abs(float(food @ stocks)) < 0.05


def test_unknown_embedders_are_refused():
    for embedder_id in ("", "word2vec", "openai:", "fastembed:"):
        with pytest.raises(EmbedderError, match="Unknown embedder"):
            embedder_get(embedder_id)


def test_an_openai_compatible_endpoint_embeds_at_the_columns_width(fake_openai):
    vectors = embedder_get("openai:text-embedding-3-small").embed(["cats purr", "dogs bark"])
    [request] = fake_openai.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "text-embedding-3-small", "input": ["cats purr", "dogs bark"], "dimensions": 384, "encoding_format": "float"}
    assert [len(vector) for vector in vectors] == [384, 384]
    assert all(np.linalg.norm(vector) == pytest.approx(1.0) for vector in vectors)


def test_an_endpoint_that_fails_gives_a_readable_reason(fake_openai):
    fake_openai.push(Failure(401, "Incorrect API key provided"), Failure(401, "Incorrect API key provided"), Failure(401, "Incorrect API key provided"))
    with pytest.raises(EmbedderError, match="refused text-embedding-3-small.*Incorrect API key"):
        embedder_get("openai:text-embedding-3-small").embed(["x"])


@pytest.mark.django_db(transaction=True)
def test_reembed_moves_a_base_to_another_embedder_and_it_stays_searchable(fake_openai, capsys):
    base = base_get_or_create(name="moving")
    alices = content_insert(user_id="alice", base_id=base.pk, source_type="text", text="Purring cats sleep on warm sofas.").content
    bobs = content_insert(user_id="bob", base_id=base.pk, source_type="text", text="Interest rates rose again this quarter.").content
    ingest()
    assert {c.embedder_id for c in Chunk.all_users.all()} == {"minilm"}

    call_command("knowledge_reembed", "moving", "--to", "openai:text-embedding-3-small")
    out = capsys.readouterr().out
    assert "pass 1: 2 content(s) to embed" in out and "2 content(s), 2 chunk(s) embedded with openai:text-embedding-3-small; 2 chunk(s) of minilm deleted" in out
    base = KnowledgeBase.all_users.get(pk=base.pk)
    assert base.embedder_id == "openai:text-embedding-3-small"
    assert {(c.content_id, c.embedder_id) for c in Chunk.all_users.all()} == {(alices.pk, base.embedder_id), (bobs.pk, base.embedder_id)}
    assert set(Content.all_users.values_list("embedder_id", flat=True)) == {base.embedder_id}
    # the fake endpoint's vectors share dimensions with shared words; isolation holds as before
    [hit] = knowledge_search(user="alice", base_id=base.pk, query="cats sofas", limit=5)
    assert hit.content_id == alices.pk
    # new contents now use the new embedder
    content_insert(user_id="alice", base_id=base.pk, source_type="text", text="Dogs bark at the postman.")
    ingest()
    assert set(Chunk.all_users.values_list("embedder_id", flat=True)) == {base.embedder_id}

    with pytest.raises(CommandError, match="already uses"):
        call_command("knowledge_reembed", base.pk, "--to", "openai:text-embedding-3-small")
    with pytest.raises(CommandError, match="No knowledge base"):
        call_command("knowledge_reembed", "nope", "--to", "minilm")
