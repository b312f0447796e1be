"""Search: semantic vectors, full text, hybrid fusion, metadata filters, and per-user isolation
on every path (the SQL guard checks each statement's owner clause meanwhile)."""
from __future__ import annotations

import asyncio

import pytest

from engine.knowledge import KnowledgeHit, KnowledgeSource
from knowledge.models import Chunk, KnowledgeBase
from knowledge.services import BaseSource, SearchError, content_insert, knowledge_search
from knowledge.services.search import fuse
from tests.conftest import run_async
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = {
    "pets": "My cat sleeps on the sofa all afternoon and purrs when it is stroked.",
    "markets": "Share prices fell sharply after the central bank raised interest rates.",
    "cooking": "Simmer the tomatoes with garlic and olive oil for twenty minutes.",
    "travel": "The night train from Vienna to Rome leaves at eight in the evening.",
}


def _add(base, user_id, key, **fields):
    return content_insert(user_id=user_id, base_id=base.pk, source_type="text", text=DOCS[key], name=key, **fields).content


@pytest.fixture
def corpus(shared_base):
    """alice owns pets and markets, bob owns cooking, travel is shared (no owner)."""
    contents = {
        "pets": _add(shared_base, "alice", "pets", metadata={"topic": "animals", "year": 2024}),
        "markets": _add(shared_base, "alice", "markets", metadata={"topic": "finance", "year": 2023}),
        "cooking": _add(shared_base, "bob", "cooking", metadata={"topic": "food"}),
        "travel": _add(shared_base, None, "travel", metadata={"topic": "trips"}),
    }
    assert ingest() == ["COMPLETED"] * 4
    return contents


def _names(hits):
    return [hit.name for hit in hits]


def test_vector_search_understands_paraphrases(shared_base, corpus):
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="Which pet naps on the couch?", limit=3)
    assert _names(hits)[0] == "pets" and 0 < hits[0].score <= 1
    assert _names(knowledge_search(user="alice", base_id=shared_base.pk, query="stock exchange crash", limit=1)) == ["markets"]
    # no word in common: full text finds nothing, the vectors still do
    assert knowledge_search(user="alice", base_id=shared_base.pk, query="feline couch", search_type="keyword") == []


def test_keyword_search_finds_words_with_their_stems(shared_base, corpus):
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="raising rates", search_type="keyword")
    assert _names(hits) == ["markets"] and hits[0].score > 0


def test_hybrid_search_fuses_both_rankings(shared_base, corpus):
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="train to Rome", search_type="hybrid", limit=3)
    assert _names(hits)[0] == "travel"
    # with the lexical list's weight at 0 hybrid is the vector ranking
    vector = knowledge_search(user="alice", base_id=shared_base.pk, query="sofa", limit=3)
    weighted = knowledge_search(user="alice", base_id=shared_base.pk, query="sofa", search_type="hybrid", keyword_weight=0, limit=3)
    assert _names(weighted) == _names(vector)


def test_fusion_weights_and_k_decide_who_wins():
    semantic, lexical = [1, 2, 3], [3, 4, 1]
    assert fuse([(semantic, 1.0), (lexical, 1.0)], k=60, limit=2) == [(1, pytest.approx(1 / 61 + 1 / 63)), (3, pytest.approx(1 / 63 + 1 / 61))]
    assert [i for i, _ in fuse([(semantic, 1.0), (lexical, 0.1)], k=1, limit=4)] == [1, 2, 3, 4]
    # the same lists with equal weights: the lexical list's first pulls level with the semantic one's
    assert [i for i, _ in fuse([(semantic, 1.0), (lexical, 1.0)], k=1, limit=2)] == [1, 3]


@pytest.mark.parametrize("search_type", ["vector", "keyword", "hybrid"])
def test_a_user_never_gets_another_users_chunks(shared_base, corpus, search_type):
    query = "cat sofa share prices tomatoes garlic train Rome"
    seen = {
        user: {hit.name for hit in knowledge_search(user=user, base_id=shared_base.pk, query=query, search_type=search_type, limit=10)}
        for user in ("alice", "bob", "carol", None)
    }
    assert seen == {
        "alice": {"pets", "markets", "travel"},
        "bob": {"cooking", "travel"},
        "carol": {"travel"},
        None: {"travel"},
    }


def test_metadata_filters_are_equality_on_keys(shared_base, corpus):
    query = "anything at all"
    assert _names(knowledge_search(user="alice", base_id=shared_base.pk, query=query, filters={"topic": "finance"}, limit=10)) == ["markets"]
    assert _names(knowledge_search(user="alice", base_id=shared_base.pk, query=query, filters={"year": 2024}, limit=10)) == ["pets"]
    assert knowledge_search(user="alice", base_id=shared_base.pk, query=query, filters={"topic": "food"}, limit=10) == []  # bob's
    assert knowledge_search(user="alice", base_id=shared_base.pk, query=query, filters={"topic__contains": "a"}, limit=10) == []
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="prices", search_type="keyword", filters={"topic": "animals"})
    assert hits == []
    with pytest.raises(SearchError, match="must be a string"):
        knowledge_search(user="alice", base_id=shared_base.pk, query=query, filters={"topic": ["a", "b"]})


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"op": "EQ", "key": "topic", "value": "finance"}, {"markets"}),
        ({"op": "NEQ", "key": "topic", "value": "finance"}, {"pets", "travel"}),
        ({"op": "IN", "key": "topic", "values": ["animals", "trips"]}, {"pets", "travel"}),
        ({"op": "GT", "key": "year", "value": 2023}, {"pets"}),
        ({"op": "LTE", "key": "year", "value": 2024}, {"pets", "markets"}),
        ({"op": "CONTAINS", "key": "topic", "value": "nan"}, {"markets"}),
        ({"op": "STARTSWITH", "key": "topic", "value": "tr"}, {"travel"}),
        ({"op": "OR", "conditions": [{"op": "EQ", "key": "topic", "value": "trips"}, {"op": "EQ", "key": "year", "value": 2023}]}, {"travel", "markets"}),
        ({"op": "NOT", "condition": {"op": "IN", "key": "topic", "values": ["animals", "finance"]}}, {"travel"}),
        ([{"op": "GTE", "key": "year", "value": 2023}, {"op": "LT", "key": "year", "value": 2024}], {"markets"}),
    ],
    ids=["eq", "neq", "in", "gt", "lte", "contains", "startswith", "or", "not", "list-is-and"],
)
def test_agno_filter_expressions(shared_base, corpus, filters, expected):
    hits = knowledge_search(user="alice", base_id=shared_base.pk, query="anything", filters=filters, limit=10)
    assert {hit.name for hit in hits} == expected
    assert {hit.name for hit in knowledge_search(user="alice", base_id=shared_base.pk, query="anything", search_type="hybrid", filters=filters, limit=10)} <= expected


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"op": "LIKE", "key": "a", "value": "b"}, "unknown filter operator"),
        ({"op": "IN", "key": "a", "values": "b"}, "IN needs a list"),
        ({"op": "AND", "conditions": []}, "non-empty list"),
        ({"op": "EQ", "key": "", "value": 1}, "non-empty string"),
        ({"op": "GT", "key": "a", "value": True}, "a number or a string"),
        ("topic=finance", "must be an object"),
    ],
)
def test_malformed_filters_are_refused(shared_base, filters, message):
    with pytest.raises(SearchError, match=message):
        knowledge_search(user="alice", base_id=shared_base.pk, query="", filters=filters)


def test_bad_searches_are_refused(shared_base):
    for kwargs, message in (({"search_type": "fuzzy"}, "search_type"), ({"limit": 0}, "limit"), ({"limit": 101}, "limit")):
        with pytest.raises(SearchError, match=message):
            knowledge_search(user="alice", base_id=shared_base.pk, query="x", **kwargs)
    bobs_base = KnowledgeBase.objects.create(user_id="bob", name="bob-private", embedder_id="minilm")
    with pytest.raises(KnowledgeBase.DoesNotExist):
        knowledge_search(user="alice", base_id=bobs_base.pk, query="x")


def test_the_base_source_implements_the_runtime_contract_off_the_event_loop(shared_base, corpus):
    source = BaseSource("docs")
    assert isinstance(source, KnowledgeSource) and source.name == "docs"

    async def search(user_id):
        return await asyncio.wait_for(source.asearch("sleepy cat", user_id=user_id, limit=2), 30)

    hits = run_async(lambda: search("alice"))
    assert isinstance(hits[0], KnowledgeHit) and hits[0].name == "pets"
    assert hits[0].to_dict()["content_id"] == corpus["pets"].pk and hits[0].chunk_id
    assert {hit.name for hit in run_async(lambda: search("bob"))} <= {"cooking", "travel"}
    assert run_async(lambda: BaseSource("no-such-base").asearch("x", user_id="alice")) == []


def test_a_chunk_of_another_embedder_is_not_searched(shared_base, corpus):
    # a re-embedding under way writes the new embedder's chunks beside the old ones
    chunk = Chunk.all_users.filter(content_id=corpus["pets"].pk).first()
    Chunk.all_users.filter(pk=chunk.pk).update(embedder_id="openai:other")
    assert "pets" not in _names(knowledge_search(user="alice", base_id=shared_base.pk, query="cat on the sofa", limit=4))


@pytest.mark.postgres_only
def test_a_small_tenants_top_k_is_complete_under_the_hnsw_index(shared_base, settings):
    """alice holds 1% of the chunks: the HNSW scan filtered by owner still returns her top 10,
    in the same order as exact search (iterative index scans). The planner is steered onto the
    HNSW index (no sorting allowed), with a candidate list of 10: without iterative scans, 10
    candidates of which 1% are alice's give her nothing."""
    import numpy as np
    from django.db import connection, transaction

    rng = np.random.default_rng(7)
    content_a = _add(shared_base, "alice", "pets")
    content_b = _add(shared_base, "bob", "markets")
    ingest()

    def unit(rows):
        vectors = rng.normal(size=(rows, 384)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    rows = [
        Chunk(user_id=owner, base_id=shared_base.pk, content_id=content.pk, index=1000 + n, text=f"{owner} {n}", embedding=vector.tolist(), embedder_id="minilm")
        for owner, content, vectors in (("alice", content_a, unit(30)), ("bob", content_b, unit(2970)))
        for n, vector in enumerate(vectors)
    ]
    Chunk.objects.bulk_create(rows, batch_size=1000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunks")
    query = "a query that matches nothing in particular"
    settings.KNOWLEDGE_HNSW_EF_SEARCH = 10
    settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = 0  # the graph, not the exact path for small tenants
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
            cursor.execute("SET LOCAL enable_seqscan = off")
        hits = knowledge_search(user="alice", base_id=shared_base.pk, query=query, limit=10)
    assert len(hits) == 10 and all(hit.user_id == "alice" for hit in hits)
    # exact: every alice chunk scored in process
    from knowledge.embedders import embedder_get

    q = np.asarray(embedder_get("minilm").embed([query])[0], dtype=np.float32)
    exact = sorted(
        ((float(np.asarray(c.embedding, dtype=np.float32) @ q), str(c.pk)) for c in Chunk.objects.for_user("alice")),
        reverse=True,
    )[:10]
    assert [hit.chunk_id for hit in hits] == [chunk_id for _, chunk_id in exact]


def test_the_full_text_statement_refuses_an_unscoped_chunk_query(shared_base, corpus):
    """The hand-written FTS statement (SQLite) embeds the chunk query; one that says nobody's rows
    is refused before any SQL runs, and a scoped one carries its owner clause (the SQL guard)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.tenancy import UnscopedQueryError
    from knowledge.services.search import _keyword_ranked

    if connection.vendor != "sqlite":
        pytest.skip("the raw FTS5 statement is SQLite's; PostgreSQL's full text goes through the ORM")
    with pytest.raises(UnscopedQueryError):
        _keyword_ranked(Chunk.objects.filter(base_id=shared_base.pk), "cat", 5)
    with CaptureQueriesContext(connection) as queries:
        assert len(_keyword_ranked(Chunk.objects.for_user("bob").filter(base_id=shared_base.pk), "tomatoes cat", 5)) == 1
    assert '"knowledge_chunks"."user_id" = ' in queries.captured_queries[-1]["sql"]


@pytest.mark.postgres_only
def test_a_user_with_few_chunks_is_searched_exactly(shared_base, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _add(shared_base, "alice", "pets")
    _add(shared_base, "bob", "markets")
    ingest()
    settings.KNOWLEDGE_EXACT_SEARCH_MAX_CHUNKS = 1  # alice sees her chunk and no shared one
    with CaptureQueriesContext(connection) as queries:
        [hit] = knowledge_search(user="alice", base_id=shared_base.pk, query="cat", limit=5)
    statements = " ".join(query["sql"] for query in queries.captured_queries)
    assert hit.name == "pets" and "enable_indexscan" in statements and "hnsw.iterative_scan" not in statements
    _add(shared_base, "alice", "cooking")
    ingest()
    with CaptureQueriesContext(connection) as queries:
        assert len(knowledge_search(user="alice", base_id=shared_base.pk, query="cat", limit=5)) == 2
    assert "hnsw.iterative_scan" in " ".join(query["sql"] for query in queries.captured_queries)
