"""Reranking a search's candidates: the /rerank HTTP API against a real local server (only the
outside network is stood in for), the fallback when the reranker fails, the API's
``reranking_score``, and the settings that choose a reranker."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from knowledge.rerankers import FastEmbedReranker, RemoteReranker
from knowledge.services import BaseSource, SearchError, content_insert, knowledge_search
from tests.core.test_settings import load_settings
from tests.fakes.rerank_server import FakeRerankServer
from tests.knowledge.conftest import ingest
from tests.knowledge.test_api import as_user
from tests.security.conftest import jwt_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = {
    "pets": "My cat sleeps on the sofa all afternoon and purrs when it is stroked.",
    "markets": "Share prices fell sharply after the central bank raised interest rates.",
    "travel": "The night train from Vienna to Rome leaves at eight in the evening.",
    "cooking": "Simmer the tomatoes with garlic and olive oil for twenty minutes.",
}


@pytest.fixture
def rerank_server(settings):
    server = FakeRerankServer().start()
    settings.KNOWLEDGE_RERANKER_URL = server.url
    settings.KNOWLEDGE_RERANKER_API_KEY = "rr-secret"
    settings.KNOWLEDGE_RERANKER_TIMEOUT_SECONDS = 0.5
    yield server
    server.stop()


@pytest.fixture
def corpus(shared_base):
    """alice owns pets and markets, bob owns cooking, travel is shared."""
    owners = {"pets": "alice", "markets": "alice", "cooking": "bob", "travel": None}
    contents = {
        key: content_insert(user_id=owner, base_id=shared_base.pk, source_type="text", text=DOCS[key], name=key).content
        for key, owner in owners.items()
    }
    assert ingest() == ["COMPLETED"] * 4
    return contents


def _names(hits) -> list[str]:
    return [hit.name for hit in hits]


def test_a_remote_reranker_reorders_the_fused_candidates_and_scores_them(shared_base, corpus, rerank_server):
    rerank_server.prefer = "interest rates"
    plain = knowledge_search(user="alice", base_id=shared_base.pk, query="the night train to Rome", search_type="hybrid", limit=2, reranker="none")
    assert _names(plain)[0] == "travel" and all(hit.reranking_score is None for hit in plain)
    assert rerank_server.requests == []

    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="the night train to Rome", search_type="hybrid", limit=2, reranker="remote:rr-1")
    assert _names(hits)[0] == "markets" and hits[0].reranking_score == 0.9
    assert len(hits) == 2 and hits[1].reranking_score < 0.9
    [request] = rerank_server.requests
    assert request.path == "/v1/rerank" and request.headers["authorization"] == "Bearer rr-secret"
    body = request.body
    assert (body["model"], body["query"], body["top_n"]) == ("rr-1", "the night train to Rome", 2)
    # Every candidate alice may read (more than the two asked for), never bob's passage.
    assert sorted(body["documents"]) == sorted([DOCS["pets"], DOCS["markets"], DOCS["travel"]])


def test_the_candidate_set_is_the_setting_but_never_fewer_than_the_results(shared_base, corpus, rerank_server, settings):
    settings.KNOWLEDGE_RERANK_CANDIDATES = 1
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="cat", limit=2, reranker="remote:rr-1")
    assert len(rerank_server.requests[0].body["documents"]) == 2 and len(hits) == 2


def test_the_deployments_reranker_applies_unless_a_search_says_none(shared_base, corpus, rerank_server, settings):
    settings.KNOWLEDGE_RERANKER = "remote:rr-default"
    rerank_server.prefer = "tomatoes"  # bob's: never among alice's candidates
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="cat on the sofa", limit=1)
    assert hits[0].reranking_score is not None and rerank_server.requests[0].body["model"] == "rr-default"
    knowledge_search(user="alice", base_id=shared_base.pk, query="cat on the sofa", limit=1, reranker="none")
    assert len(rerank_server.requests) == 1


def test_raw_logits_are_mapped_into_agentos_range_keeping_their_order(shared_base, corpus, rerank_server):
    rerank_server.mode, rerank_server.prefer = "logits", "purrs"
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="share prices", limit=3, reranker="remote:rr-1")
    assert _names(hits)[0] == "pets"
    scores = [hit.reranking_score for hit in hits]
    assert all(0 < score <= 1 for score in scores) and scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode, reason", [("status", "HTTP 503"), ("hang", "no answer within 0.5 s"), ("garbage", "the answer is not"), ("down", "ConnectError")])
def test_a_failing_reranker_leaves_the_searchs_own_order_with_a_warning(shared_base, corpus, rerank_server, settings, caplog, mode, reason):
    if mode == "down":
        rerank_server.stop()
    rerank_server.mode = mode
    plain = knowledge_search(user="alice", base_id=shared_base.pk, query="train to Rome", search_type="hybrid", limit=2, reranker="none")
    with caplog.at_level(logging.WARNING, logger="knowledge.services.search"):
        hits = knowledge_search(user="alice", base_id=shared_base.pk, query="train to Rome", search_type="hybrid", limit=2, reranker="remote:rr-1")
    assert [(hit.chunk_id, hit.score, hit.reranking_score) for hit in hits] == [(hit.chunk_id, hit.score, None) for hit in plain]
    [record] = [record for record in caplog.records if record.getMessage() == "knowledge rerank failed"]
    assert record.reranker == "remote:rr-1" and reason in record.error and "rr-secret" not in record.error


def test_unknown_rerankers_are_refused_where_they_are_named(shared_base, settings):
    with pytest.raises(SearchError, match="Unknown reranker 'cohere'"):
        knowledge_search(user="alice", base_id=shared_base.pk, query="cat", reranker="cohere")
    settings.KNOWLEDGE_RERANKER_URL = ""
    with pytest.raises(SearchError, match="needs KNOWLEDGE_RERANKER_URL"):
        knowledge_search(user="alice", base_id=shared_base.pk, query="cat", reranker="remote:rr-1")
    with pytest.raises(ValueError, match="Unknown reranker 'fastembed:'"):
        BaseSource("docs", reranker="fastembed:")


def test_an_agents_base_source_reranks_what_the_agent_finds(shared_base, corpus, rerank_server):
    rerank_server.prefer = "night train"
    hits = BaseSource(shared_base.name, reranker="remote:rr-agent").search("a cat asleep on a couch", user_id="alice", limit=2)
    # The agent's reference carries the reranker's score: the order it was given.
    assert hits[0].name == "travel" and hits[0].score == 0.9
    assert rerank_server.requests[0].body["model"] == "rr-agent"


# ---- the /knowledge/search API -------------------------------------------------------------------

def test_the_search_api_answers_reranking_scores_when_reranked(client, jwt_server, rerank_server, settings):  # noqa: F811
    alice = as_user(client, "alice")
    for text in (DOCS["pets"], DOCS["markets"], DOCS["travel"]):
        assert alice.upload(text_content=text).status_code == 202
    ingest()
    rerank_server.prefer = "night train"
    body = {"query": "cat on the sofa", "max_results": 2}

    # No reranker configured: none is applied, and asking for one is a client error.
    assert [hit["reranking_score"] for hit in alice.json("/knowledge/search", body).json()["data"]] == [None, None]
    refused = alice.json("/knowledge/search", {**body, "rerank": True})
    assert refused.status_code == 422
    assert refused.json()["detail"] == [{"loc": ["body", "rerank"], "msg": "This server has no reranker (KNOWLEDGE_RERANKER is not set)", "type": "value_error", "input": True}]

    settings.KNOWLEDGE_RERANKER = "remote:rr-1"
    found = alice.json("/knowledge/search", body).json()["data"]
    assert [hit["content"] for hit in found][0] == DOCS["travel"] and found[0]["reranking_score"] == 0.9
    assert found[0]["score"] is not None and -1 <= found[1]["reranking_score"] <= 1
    off = alice.json("/knowledge/search", {**body, "rerank": False}).json()["data"]
    assert off[0]["content"] == DOCS["pets"] and off[0]["reranking_score"] is None
    assert len(rerank_server.requests) == 1
    assert alice.json("/knowledge/search", {**body, "rerank": "sometimes"}).status_code == 422


# ---- settings ------------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=False)
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KNOWLEDGE_RERANKER": "cohere"}, "KNOWLEDGE_RERANKER must be remote:<model> or fastembed:<model>"),
        ({"KNOWLEDGE_RERANKER": "remote:rerank-v3.5"}, "needs KNOWLEDGE_RERANKER_URL"),
        ({"KNOWLEDGE_RERANKER_URL": "ftp://rerank"}, "KNOWLEDGE_RERANKER_URL must be an http:// or https:// URL"),
        ({"KNOWLEDGE_RERANKER_TIMEOUT_SECONDS": "soon"}, "KNOWLEDGE_RERANKER_TIMEOUT_SECONDS must be a number"),
        ({"KNOWLEDGE_RERANK_CANDIDATES": "0"}, "KNOWLEDGE_RERANK_CANDIDATES must be at least 1"),
    ],
)
def test_malformed_reranker_settings_stop_startup(tmp_path: Path, env: dict[str, str], message: str) -> None:
    result = load_settings(tmp_path, "agno_site.settings.local", **env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and message in result.stderr


@pytest.mark.django_db(transaction=False)
def test_reranker_settings_from_the_environment(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("k-123\n")
    show = "print(settings.KNOWLEDGE_RERANKER, settings.KNOWLEDGE_RERANKER_URL, settings.KNOWLEDGE_RERANKER_API_KEY, settings.KNOWLEDGE_RERANKER_TIMEOUT_SECONDS, settings.KNOWLEDGE_RERANK_CANDIDATES)"
    result = load_settings(
        tmp_path, "agno_site.settings.local", show=show, KNOWLEDGE_RERANKER="remote:rerank-v3.5",
        KNOWLEDGE_RERANKER_URL="https://rerank.internal/v2/rerank", KNOWLEDGE_RERANKER_API_KEY_FILE=str(secret), KNOWLEDGE_RERANK_CANDIDATES="50",
    )
    assert result.stdout.split() == ["remote:rerank-v3.5", "https://rerank.internal/v2/rerank", "k-123", "10.0", "50"], result.stderr


# ---- the local cross-encoder ---------------------------------------------------------------------

CROSS_ENCODER = os.environ.get("KNOWLEDGE_TEST_CROSS_ENCODER", "")


@pytest.mark.skipif(
    not CROSS_ENCODER,
    reason="No PyPI package ships a cross-encoder that fastembed can load, and this machine cannot reach the model hub: "
    "set KNOWLEDGE_TEST_CROSS_ENCODER=Xenova/ms-marco-MiniLM-L-6-v2 where it can",
)
def test_a_local_cross_encoder_ranks_the_answering_passage_first(shared_base, corpus):
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="When does the train to Rome leave?", limit=3, reranker=f"fastembed:{CROSS_ENCODER}")
    assert _names(hits)[0] == "travel" and 0.5 < hits[0].reranking_score <= 1
    assert isinstance(FastEmbedReranker(id="x", model_name=CROSS_ENCODER).rerank("q", [], 3), list)


def test_a_remote_reranker_with_nothing_to_rank_asks_nobody(rerank_server):
    assert RemoteReranker(id="remote:x", model="x", url=rerank_server.url).rerank("q", [], 3) == []
    assert rerank_server.requests == []
