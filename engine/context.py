"""pre_turn: search the layers (through the namespaced query cache), then pack.

Layers run concurrently; a failing layer is left out of the result (and logged), and a
result with a failed layer is never cached (fixes REFERENCE §16.22). The query is embedded
once per request, only when a vector layer needs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from engine.errors import MemoryError_
from engine.hits import Hit
from engine.layers import LayerQuery, search_scene, search_vectors, search_working
from engine.packing import pack
from engine.ports import Embedder, MemoryStore, QueryCache, TranscriptStore, Vector, WorkingStore
from engine.scoping import GLOBAL_NAMESPACE, namespace_chain, scope_key
from schemas.inputs import h32
from schemas.requests import (
    ContextItem,
    ContextReply,
    ContextRequest,
    ContextUsage,
    LayerSearchReply,
    LayerSearchRequest,
)
from schemas.scope import Scope

log = logging.getLogger(__name__)

SUPPORTED_LAYERS = ("working", "scene", "vectors")
"""Layers this build serves; other requested layers are absent from `totals`."""


@dataclass(frozen=True, slots=True)
class SearchPolicy:
    min_vector_score: float = 0.25
    """Cosine below which a vector row is not a hit."""
    query_cache_ttl_seconds: int = 120
    namespace_ttl_seconds: int = 480
    """Namespace counters outlive every cached value (4 × the query TTL)."""


@dataclass(frozen=True, slots=True)
class LayerResult:
    hits: dict[str, list[Hit]]
    cached: bool


def layers_cache_key(
    scope: Scope, query: str, layers: Sequence[str], limit: int, token: str
) -> str:
    """`memory:query:layers:<scope>:<H32(payload)>:ns:<token>`; ids keep their case."""
    payload = json.dumps(
        {"query": query, "layers": sorted(layers), "limit": limit, "filters": scope.filters or {}},
        sort_keys=True,
        separators=(",", ":"),
    )
    part = scope_key(
        scope.agent_wallet, scope.mode, scope.hai_id, scope.user_address, scope.thread_id
    )
    return f"memory:query:layers:{part}:{h32(payload)}:ns:{token}"


def _encode(hits: dict[str, list[Hit]]) -> bytes:
    return json.dumps({k: [asdict(h) for h in v] for k, v in hits.items()}, default=str).encode()


def _decode(blob: bytes) -> dict[str, list[Hit]]:
    data: dict[str, list[dict[str, Any]]] = json.loads(blob)
    return {k: [Hit(**h) for h in v] for k, v in data.items()}


@dataclass(slots=True)
class MemorySearch:
    transcripts: TranscriptStore
    working: WorkingStore
    memory: MemoryStore
    embedder: Embedder
    cache: QueryCache
    policy: SearchPolicy = SearchPolicy()

    async def search(
        self, scope: Scope, query: str, layers: Sequence[str], limit: int
    ) -> LayerResult:
        """Hits per layer (layers that failed or are not served are absent)."""
        token = await self.cache.token([GLOBAL_NAMESPACE, *namespace_chain(scope)])
        key = layers_cache_key(scope, query, layers, limit, token) if token else None
        if key is not None:
            blob = await self.cache.get(key)
            if blob is not None:
                return LayerResult(_decode(blob), cached=True)
        q = LayerQuery(scope=scope, query=query, limit=limit)
        runners: dict[str, Callable[[], Awaitable[list[Hit]]]] = {}
        vector: list[Vector] = []

        async def vectors() -> list[Hit]:
            if not vector:
                vector.extend(await self.embedder.embed([query], "query"))
            return await search_vectors(
                self.memory,
                q,
                vector[0],
                model=self.embedder.model,
                min_score=self.policy.min_vector_score,
            )

        for name in layers:
            if name == "working":
                runners[name] = lambda: search_working(self.working, q)
            elif name == "scene":
                runners[name] = lambda: search_scene(self.transcripts, q)
            elif name == "vectors":
                runners[name] = vectors
        outcomes = await asyncio.gather(
            *(run() for run in runners.values()), return_exceptions=True
        )
        hits: dict[str, list[Hit]] = {}
        complete = True
        for name, outcome in zip(runners, outcomes, strict=True):
            if isinstance(outcome, MemoryError_):
                log.warning("layer %s failed: %s", name, outcome, extra={"layer": name})
                complete = False
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                hits[name] = outcome
        if key is not None and complete:
            await self.cache.set(key, _encode(hits), self.policy.query_cache_ttl_seconds)
        return LayerResult(hits, cached=False)

    async def context(self, request: ContextRequest, now_ms: int) -> ContextReply:
        """The packed Memory context of REFERENCE §6.6."""
        result = await self.search(request.scope, request.query, request.layers, request.limit)
        packed = pack(
            request.query,
            result.hits,
            layer_order=request.layers,
            max_items=request.max_items,
            max_item_chars=request.max_item_chars,
            budget_chars=request.budget_chars,
            now_ms=now_ms,
        )
        s = request.scope
        ident = f"{s.agent_wallet}|{s.user_address}|{s.thread_id}|{s.mode}|{s.hai_id}"
        return ContextReply(
            context_id="ctx_" + h32(f"{ident}|{request.query}|{now_ms}"),
            prompt=packed.prompt,
            items=[
                ContextItem(
                    layer=i.layer,
                    text=i.text,
                    id=i.id,
                    score=i.score,
                    source=i.source,
                    created_at=i.created_at,
                )
                for i in packed.items
            ],
            totals=packed.totals,
            context_usage=ContextUsage(
                characters=packed.characters,
                raw_characters=packed.raw_characters,
                budget_characters=packed.budget_characters,
                saved_characters_vs_raw=packed.saved_characters_vs_raw,
                items=len(packed.items),
            ),
            omitted=packed.omitted,
            raw={k: [dict(h.raw) for h in v] for k, v in result.hits.items()}
            if request.include_raw
            else None,
            cached=result.cached,
        )

    async def layer_search(self, request: LayerSearchRequest) -> LayerSearchReply:
        """Raw layer items (no packing), REFERENCE §3 output."""
        result = await self.search(request.scope, request.query, request.layers, request.limit)
        return LayerSearchReply(
            query=request.query,
            layers={k: [dict(h.raw) for h in v] for k, v in result.hits.items()},
            totals={k: len(v) for k, v in result.hits.items()},
            cached=result.cached,
        )


async def invalidate(cache: QueryCache, scope: Scope, policy: SearchPolicy = SearchPolicy()) -> int:
    """Bump exactly the written scope's namespace chain (never the global key)."""
    return await cache.bump(namespace_chain(scope), policy.namespace_ttl_seconds)
