"""HTTP rerankers against a real local HTTP server speaking each provider's protocol, and the
fail-soft rerank step (reference §5.2; §16.17)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from engine.adapters.rerankers import CloudflareReranker, HttpRerankReranker
from engine.decay import MS_PER_DAY
from engine.errors import DependencyFailed
from engine.retrieval.hits import Hit
from engine.retrieval.rerank import rerank_fail_soft
from tests.support.http_server import Provider, Received, Reply, Responder, closed_port

NOW = 1_750_000_000_000
ACCOUNT = "acc-123"
MODEL_PATH = "/client/v4/accounts/acc-123/ai/run/@cf/baai/bge-reranker-base"


def cloudflare(client: httpx.AsyncClient, base: str, timeout: float = 2.0) -> CloudflareReranker:
    return CloudflareReranker(
        client,
        account_id=ACCOUNT,
        api_token="cf-token",  # noqa: S106 - a fake token for the stub server
        timeout=timeout,
        base_url=base,
    )


def cf_ok(items: list[dict[str, Any]]) -> Reply:
    return Reply(body={"result": {"response": items}, "success": True, "errors": []})


DOCS = [("m1", "alpha memory"), ("m2", "beta memory"), ("m3", "gamma memory")]


# --- Cloudflare Workers AI --------------------------------------------------------------------


async def test_cloudflare_sends_the_workers_ai_request_and_maps_indices_to_ids(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(
        lambda _: cf_ok([{"id": 2, "score": 0.9}, {"id": 0, "score": 0.1}, {"id": 1, "score": 0.5}])
    )
    scores = await cloudflare(client, f"{server.url}/client/v4").rerank("which one?", DOCS)

    assert scores == {"m3": 0.9, "m1": 0.1, "m2": 0.5}
    (request,) = server.received
    assert request.path == MODEL_PATH
    assert request.headers["authorization"] == "Bearer cf-token"
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {
        "query": "which one?",
        "contexts": [{"text": "alpha memory"}, {"text": "beta memory"}, {"text": "gamma memory"}],
        "top_k": 3,
    }


async def test_cloudflare_logits_are_mapped_through_a_sigmoid(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(
        lambda _: cf_ok(
            [{"id": 0, "score": 6.18}, {"id": 1, "score": -8.15}, {"id": 2, "score": 0.0}]
        )
    )
    scores = await cloudflare(client, server.url).rerank("q", DOCS)
    assert scores == pytest.approx(
        {"m1": 1 / (1 + math.exp(-6.18)), "m2": 1 / (1 + math.exp(8.15)), "m3": 0.5}
    )


async def test_cloudflare_does_not_send_empty_texts(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: cf_ok([{"id": 0, "score": 0.7}]))
    scores = await cloudflare(client, server.url).rerank("q", [("a", "  "), ("b", "beta")])
    assert scores == {"b": 0.7}
    assert server.received[0].json()["contexts"] == [{"text": "beta"}]
    assert await cloudflare(client, server.url).rerank("q", [("a", "")]) == {}
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(status=500, body=b"upstream exploded"), "HTTP 500"),
        (
            Reply(body={"success": False, "errors": [{"code": 5006, "message": "bad input"}]}),
            "bad input",
        ),
        (Reply(body=b"{not json"), "not JSON"),
        (Reply(body={"success": True, "result": {}}), "malformed"),
        (Reply(body=[1, 2]), "malformed"),
        (cf_ok([]), "no usable score"),
        (cf_ok([{"id": 7, "score": 0.5}, {"id": 0, "score": "high"}]), "no usable score"),
    ],
    ids=["http-500", "success-false", "bad-json", "no-response", "not-object", "empty", "junk"],
)
async def test_cloudflare_failures_raise_dependency_failed(
    provider: Callable[[Responder], Provider],
    client: httpx.AsyncClient,
    reply: Reply,
    message: str,
) -> None:
    server = provider(lambda _: reply)
    with pytest.raises(DependencyFailed, match=message):
        await cloudflare(client, server.url).rerank("q", DOCS)


async def test_cloudflare_timeout_raises_dependency_failed(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: Reply(body={"success": True}, delay_s=1.0))
    started = time.monotonic()
    with pytest.raises(DependencyFailed, match="timed out"):
        await cloudflare(client, server.url, timeout=0.2).rerank("q", DOCS)
    assert time.monotonic() - started < 0.9


async def test_a_dead_server_raises_dependency_failed(client: httpx.AsyncClient) -> None:
    with pytest.raises(DependencyFailed, match="ConnectError"):
        await cloudflare(client, f"http://127.0.0.1:{closed_port()}").rerank("q", DOCS)


# --- Cohere / Jina / Voyage-style /rerank -----------------------------------------------------


def http_reranker(
    client: httpx.AsyncClient, url: str, api_key: str = "key-1", **kwargs: Any
) -> HttpRerankReranker:
    return HttpRerankReranker(
        client, url=f"{url}/v1/rerank", api_key=api_key, model="rerank-v3.5", **kwargs
    )


async def test_cohere_style_request_and_results(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(
        lambda _: Reply(
            body={
                "id": "r-1",
                "results": [
                    {"index": 1, "relevance_score": 0.93},
                    {"index": 2, "relevance_score": 0.41},
                    {"index": 0, "relevance_score": 0.02},
                ],
                "meta": {"billed_units": {"search_units": 1}},
            }
        )
    )
    scores = await http_reranker(client, server.url).rerank("capital?", DOCS)

    assert scores == {"m2": 0.93, "m3": 0.41, "m1": 0.02}
    (request,) = server.received
    assert request.path == "/v1/rerank"
    assert request.headers["authorization"] == "Bearer key-1"
    assert request.json() == {
        "model": "rerank-v3.5",
        "query": "capital?",
        "documents": ["alpha memory", "beta memory", "gamma memory"],
        "top_n": 3,
    }


async def test_voyage_style_data_list_and_top_k(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(
        lambda _: Reply(
            body={
                "object": "list",
                "data": [
                    {"index": 0, "relevance_score": 0.8},
                    {"index": 2, "relevance_score": 0.3},
                ],
                "model": "rerank-2",
                "usage": {"total_tokens": 12},
            }
        )
    )
    scores = await http_reranker(client, server.url, top_field="top_k").rerank("q", DOCS)
    assert scores == {"m1": 0.8, "m3": 0.3}
    body = server.received[0].json()
    assert body["top_k"] == 3
    assert "top_n" not in body


async def test_no_api_key_sends_no_authorization_and_top_can_be_omitted(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: Reply(body={"results": [{"index": 0, "score": 0.6}]}))
    reranker = http_reranker(client, server.url, api_key="", top_field=None)
    assert await reranker.rerank("q", DOCS) == {"m1": 0.6}
    request = server.received[0]
    assert "authorization" not in request.headers
    assert set(request.json()) == {"model", "query", "documents"}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(status=500, body=b'{"message": "internal"}'), "HTTP 500"),
        (Reply(status=429, body=b"slow down"), "HTTP 429"),
        (Reply(body=b"<html>oops</html>"), "not JSON"),
        (Reply(body={"results": "nope"}), "malformed"),
        (Reply(body={"results": [{"index": 9, "relevance_score": 0.9}]}), "no usable score"),
    ],
    ids=["http-500", "http-429", "html", "results-not-a-list", "index-out-of-range"],
)
async def test_http_reranker_failures_raise_dependency_failed(
    provider: Callable[[Responder], Provider],
    client: httpx.AsyncClient,
    reply: Reply,
    message: str,
) -> None:
    server = provider(lambda _: reply)
    with pytest.raises(DependencyFailed, match=message):
        await http_reranker(client, server.url).rerank("q", DOCS)


async def test_http_reranker_timeout_raises_dependency_failed(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: Reply(body={"results": []}, delay_s=1.0))
    with pytest.raises(DependencyFailed, match="timed out"):
        await http_reranker(client, server.url, timeout=0.2).rerank("q", DOCS)


# --- rerank_fail_soft -------------------------------------------------------------------------


def hit(hit_id: str, score: float, created_at: int = NOW) -> Hit:
    return Hit(
        layer="vectors", id=hit_id, text=f"text of {hit_id}", score=score, created_at=created_at
    )


# Decayed: h2 0.50, h3 0.48, h1 0.9 × 0.25 = 0.225 (gap 0.02 < 0.05 ⇒ not dominated).
HITS = [hit("h1", 0.9, created_at=NOW - 60 * MS_PER_DAY), hit("h2", 0.50), hit("h3", 0.48)]


async def test_fail_soft_with_a_dead_server_keeps_the_decayed_order(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    reranker = cloudflare(client, f"http://127.0.0.1:{closed_port()}")
    with caplog.at_level(logging.WARNING, logger="engine.retrieval.rerank"):
        ranked, outcome = await rerank_fail_soft(reranker, "q", HITS, now_ms=NOW)
    assert [h.id for h in ranked] == ["h2", "h3", "h1"]
    assert [h.score for h in ranked] == pytest.approx([0.50, 0.48, 0.225])
    assert outcome.startswith("failed: ")
    assert "ConnectError" in outcome
    assert "rerank failed" in caplog.text


async def test_fail_soft_with_a_working_server_reorders(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    def reverse(request: Received) -> Reply:
        n = len(request.json()["contexts"])
        return cf_ok([{"id": i, "score": 0.1 + 0.3 * i} for i in range(n)])

    server = provider(reverse)
    ranked, outcome = await rerank_fail_soft(cloudflare(client, server.url), "q", HITS, now_ms=NOW)
    assert outcome == "reranked"
    # Sent in decayed order h2, h3, h1; scored 0.1, 0.4, 0.7 ⇒ h1 0.7 × 0.25 (decay kept).
    assert [c["text"] for c in server.received[0].json()["contexts"]] == [
        "text of h2",
        "text of h3",
        "text of h1",
    ]
    assert [h.id for h in ranked] == ["h3", "h1", "h2"]
    assert [h.score for h in ranked] == pytest.approx([0.4, 0.175, 0.1])

    fresh = [hit("a", 0.50), hit("b", 0.49), hit("c", 0.48)]
    ranked, outcome = await rerank_fail_soft(cloudflare(client, server.url), "q", fresh, now_ms=NOW)
    assert (outcome, [h.id for h in ranked]) == ("reranked", ["c", "b", "a"])


async def test_fail_soft_skips_two_candidates_without_calling(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: cf_ok([{"id": 0, "score": 1.0}]))
    ranked, outcome = await rerank_fail_soft(
        cloudflare(client, server.url), "q", HITS[1:], now_ms=NOW
    )
    assert outcome.startswith("skipped: too few candidates")
    assert [h.id for h in ranked] == ["h2", "h3"]
    assert server.received == []


async def test_fail_soft_skips_a_dominant_hit_and_an_empty_query(
    provider: Callable[[Responder], Provider], client: httpx.AsyncClient
) -> None:
    server = provider(lambda _: cf_ok([{"id": 0, "score": 1.0}]))
    reranker = cloudflare(client, server.url)
    dominated = [hit("a", 0.9), hit("b", 0.5), hit("c", 0.4)]
    _, outcome = await rerank_fail_soft(reranker, "q", dominated, now_ms=NOW)
    assert outcome.startswith("skipped: top hit dominates")
    _, outcome = await rerank_fail_soft(reranker, "  ", HITS, now_ms=NOW)
    assert outcome == "skipped: empty query"
    assert server.received == []


async def test_fail_soft_disabled_and_no_usable_scores() -> None:
    ranked, outcome = await rerank_fail_soft(None, "q", HITS, now_ms=NOW)
    assert (outcome, [h.id for h in ranked]) == ("disabled", ["h2", "h3", "h1"])

    class Unhelpful:
        name = "unhelpful"

        async def rerank(self, query: str, documents: Any) -> dict[str, float]:
            return {"not-a-candidate": 0.9, "h1": math.nan}

    ranked, outcome = await rerank_fail_soft(Unhelpful(), "q", HITS, now_ms=NOW)
    assert (outcome, [h.id for h in ranked]) == ("failed: no usable scores", ["h2", "h3", "h1"])
