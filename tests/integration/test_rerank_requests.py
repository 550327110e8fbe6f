"""`RerankRequest` over Kafka (`memory.rerank.v1`, the search group): with a Cohere-style
`/rerank` provider (a local HTTP server) its scores rank the documents, and its failure is an
error reply marked `upstream` (not fail-soft, reference §13.4); without one the local
relevance ranks them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from tests.support.http_server import Provider, Received, Reply, Responder
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


def cohere(request: Received) -> Reply:
    body = request.json()
    if body["query"] == "fail":
        return Reply(503, {"message": "overloaded"})
    scores = [0.9 if "tram" in d else 0.1 for d in body["documents"]]
    results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
    return Reply(200, {"results": sorted(results, key=lambda r: -r["relevance_score"])})


async def test_a_rerank_provider_ranks_and_its_failure_is_an_error_reply(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    provider: Callable[[Responder], Provider],
) -> None:
    server = provider(cohere)
    async with groups_running(
        stack,
        minilm,
        "rerank",
        ["search"],
        rerank_provider="http",
        rerank_url=f"{server.url}/rerank",
        rerank_model="rerank-test",
    ) as (_, client):
        reply = await client.rerank(
            "Which line does Kai ride?",
            ["Bikes need oil.", {"content": "Kai rides tram 28.", "score": 0.3}],
            top_k=5,
            timeout=60,
        )
        assert reply.error is None, reply.error
        assert reply.ranker == "rerank:rerank-test"
        assert [(r.index, r.relevance) for r in reply.results] == [(1, 0.9), (0, 0.1)]
        assert reply.results[0].content == "Kai rides tram 28."
        sent = server.received[-1].json()
        assert sent["documents"] == ["Bikes need oil.", "Kai rides tram 28."]
        assert sent["model"] == "rerank-test"

        failed = await client.rerank("fail", ["a", "b"], timeout=30)
        assert failed.upstream is True
        assert failed.results == []
        assert "503" in (failed.error or "")


async def test_without_a_reranker_the_local_relevance_ranks(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    async with groups_running(stack, minilm, "rerank_local", ["search"]) as (_, client):
        reply = await client.rerank(
            "Which streetcar does Kai like best?",
            ["The quarterly report is due on Friday.", "Kai's favourite tram line is the 28."],
            timeout=60,
        )
        assert reply.error is None, reply.error
        assert reply.ranker == "local"
        assert [r.index for r in reply.results] == [1, 0]
        assert reply.results[0].relevance > reply.results[1].relevance
