"""search group: answers `ContextRequest` (pre_turn), `LayerSearchRequest` and
`RerankRequest` through the request's `reply_to` topic with the same `correlation_id`
(FastStream publishes the return value there). An invalid request or a failed search is
answered with `error` set, so the caller gets a clear message instead of a timeout."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from faststream.kafka import KafkaRouter
from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from engine.errors import DependencyFailed, MemoryError_
from engine.retrieval.rerank import rank_documents
from schemas import topics
from schemas.requests import (
    ContextReply,
    ContextRequest,
    LayerSearchReply,
    LayerSearchRequest,
    RerankReply,
    RerankRequest,
    RerankResult,
)
from schemas.scope import first_error
from services.runtime import Runtime
from services.stream.consumers import EXPIRED, GroupRouter, expired
from services.stream.metrics import Metrics

GROUP = "search"
R = TypeVar("R", ContextReply, LayerSearchReply)
log = logging.getLogger(__name__)


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    def counted(request: str, reply: R) -> R:
        if metrics is not None and reply.error is None:
            metrics.cache_lookup(request, hit=reply.cached)
        return reply

    async def on_context_request(message: KafkaMessage) -> ContextReply:
        if expired(message):
            return ContextReply(error=EXPIRED)
        try:
            request = ContextRequest.model_validate_json(message.body)
            now = int(time.time() * 1000)
            return counted("context", await rt.search.context(request, now))
        except ValidationError as exc:
            return ContextReply(error=first_error(exc))
        except MemoryError_ as exc:
            log.warning("context request failed: %s", exc)
            return ContextReply(error=str(exc))

    async def on_layer_search(message: KafkaMessage) -> LayerSearchReply:
        if expired(message):
            return LayerSearchReply(error=EXPIRED)
        try:
            request = LayerSearchRequest.model_validate_json(message.body)
            now = int(time.time() * 1000)
            return counted("layers", await rt.search.layer_search(request, now))
        except ValidationError as exc:
            return LayerSearchReply(error=first_error(exc))
        except MemoryError_ as exc:
            log.warning("layer search failed: %s", exc)
            return LayerSearchReply(error=str(exc))

    # one consumer reads the three request topics: one short-wait poller, not three
    group.repliers(
        {
            topics.SEARCH: on_context_request,
            topics.LAYER_SEARCH: on_layer_search,
            topics.RERANK: rerank_answer(rt),
        },
        workers=rt.settings.search.workers,
        fetch_wait_ms=rt.settings.kafka.search_fetch_wait_ms,
    )
    return group.router


def rerank_answer(rt: Runtime) -> Callable[[KafkaMessage], Awaitable[RerankReply]]:
    """The handler of `RerankRequest` on `memory.rerank.v1`."""

    async def on_rerank(message: KafkaMessage) -> RerankReply:
        if expired(message):
            return RerankReply(error=EXPIRED)
        try:
            return await rerank(rt, RerankRequest.model_validate_json(message.body))
        except ValidationError as exc:
            return RerankReply(error=first_error(exc))
        except DependencyFailed as exc:
            log.warning("rerank failed: %s", exc)
            return RerankReply(error=str(exc) or type(exc).__name__, upstream=True)
        except MemoryError_ as exc:
            return RerankReply(error=str(exc))

    return on_rerank


async def rerank(rt: Runtime, request: RerankRequest) -> RerankReply:
    """The request's documents ranked (`engine.retrieval.rerank.rank_documents`)."""
    ranked, ranker = await rank_documents(
        request.query,
        [(d.content, d.score) for d in request.documents],
        top_k=request.top_k,
        reranker=rt.reranker,
        embedder=rt.embedder,
        policy=rt.search_policy.relevance,
    )
    results = [
        RerankResult(index=r.index, content=r.content, score=r.score, relevance=r.relevance)
        for r in ranked
    ]
    return RerankReply(results=results, ranker=ranker)


async def flush_access_counts(rt: Runtime) -> None:
    """Write the access counts of returned items every `access_flush_seconds` (batched)."""
    while True:
        await asyncio.sleep(rt.settings.search.access_flush_seconds)
        try:
            await rt.access.flush(int(time.time() * 1000))
        except MemoryError_ as exc:  # counters are advisory: log and keep serving
            log.warning("access count flush failed: %s", exc)
