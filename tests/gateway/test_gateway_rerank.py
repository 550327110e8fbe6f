"""POST /api/memory/rerank (reference §13.4): authenticated, bounded, answered by the search
group over Kafka (here without a reranker: the local relevance ranks), a provider failure
502."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.requests import MAX_RERANK_DOCUMENT_CHARS, MAX_RERANK_DOCUMENTS, RerankReply
from services.gateway.errors import ApiError
from services.gateway.rerank import _results
from tests.gateway.conftest import PREFIX, Gateway

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]
URL = f"{PREFIX}/rerank"


async def test_rerank_ranks_documents_by_local_relevance(gw: Gateway) -> None:
    r = await gw.http.post(
        URL,
        json={
            "query": "Which streetcar does Kai like best?",
            "documents": [
                {"content": "The quarterly report is due on Friday.", "score": 0.9},
                {"content": "Kai's favourite tram line is the 28."},
                {"content": "Bikes need oil."},
            ],
            "topK": 2,
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ranker"] == "local"
    results = body["results"]
    assert [x["index"] for x in results][:1] == [1]
    assert len(results) == 2
    assert results[0]["content"] == "Kai's favourite tram line is the 28."
    assert results[0]["score"] >= results[1]["score"]
    assert 0.0 <= results[1]["relevance"] <= results[0]["relevance"] <= 1.0


async def test_rerank_needs_a_credential(gw: Gateway) -> None:
    r = await gw.anon.post(URL, json={"query": "q", "documents": [{"content": "a"}]})
    assert r.status_code == 401
    assert r.json()["error"]


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"documents": [{"content": "a"}]}, "query"),
        ({"query": "", "documents": [{"content": "a"}]}, "query"),
        ({"query": "q", "documents": []}, "documents"),
        ({"query": "q"}, "documents"),
        ({"query": "q", "documents": [{"content": "a"}] * (MAX_RERANK_DOCUMENTS + 1)}, "documents"),
        (
            {"query": "q", "documents": [{"content": "x" * (MAX_RERANK_DOCUMENT_CHARS + 1)}]},
            "content",
        ),
        ({"query": "q", "documents": [{"content": "a", "extra": 1}]}, "extra"),
        ({"query": "q", "documents": ["a"]}, "documents"),
    ],
)
async def test_rerank_bodies_outside_the_limits_are_400(
    gw: Gateway, body: dict[str, Any], names: str
) -> None:
    r = await gw.http.post(URL, json=body)
    assert r.status_code == 400, r.text
    assert names in r.json()["error"]


@pytest.mark.parametrize("top_k", [0, -1, 101])
async def test_a_top_k_out_of_its_range_is_422(gw: Gateway, top_k: int) -> None:
    r = await gw.http.post(URL, json={"query": "q", "documents": [{"content": "a"}], "topK": top_k})
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith("topK: ")


async def test_a_provider_failure_is_502_and_bad_input_400() -> None:
    with pytest.raises(ApiError) as failed:
        _results(RerankReply(error="rerank:m: HTTP 503", upstream=True))
    assert failed.value.status_code == 502
    with pytest.raises(ApiError) as bad:
        _results(RerankReply(error="query: too long"))
    assert bad.value.status_code == 400
