"""pre_turn: search the layers (through the namespaced query cache), then pack.

The query is embedded once per request (fixes reference §16.22's double embedding). Layers
run concurrently; a failing layer is left out of the result (and logged), and a result with a
failed layer is never cached (§16.22). If the embedder fails, the text layers still answer
lexically and the memory layers are reported missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from engine.decay import DEFAULT_HALF_LIFE_DAYS
from engine.errors import DependencyFailed, MemoryError_
from engine.filters import parse_filters
from engine.ports import (
    ArchiveStore,
    Embedder,
    PatternStore,
    QueryCache,
    RelationStore,
    Reranker,
    TranscriptStore,
    Vector,
    VectorIndex,
    WorkingStore,
)
from engine.retrieval.defaults import (
    DEFAULT_DOMINANCE_DELTA,
    DEFAULT_MIN_CANDIDATES,
    DEFAULT_MMR_LAMBDA,
    DEFAULT_QUERY_CACHE_TTL_SECONDS,
)
from engine.retrieval.hits import Hit, memories
from engine.retrieval.layers import (
    LayerQuery,
    MemoryLayerOptions,
    ReadTokens,
    search_archives,
    search_memory,
    search_patterns,
    search_scene,
    search_working,
)
from engine.retrieval.packing import pack
from engine.retrieval.reads import DEFAULT_MAX_READS, ReadMemo
from engine.retrieval.relevance import RelevancePolicy
from engine.retrieval.spans import LayerSpans
from engine.retrieval.usage import MEMORY_LAYERS, AccessRecorder
from engine.scoping import (
    GLOBAL_NAMESPACE,
    family_chain,
    namespace_chain,
    scope_key,
    shared_chain,
)
from schemas.ids import h32
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


FAMILY_READS = ("patterns", "archives", "relations")
"""The token families of `ReadTokens`, in its field order after `thread` and `tenant`."""


@dataclass(frozen=True, slots=True)
class SearchPolicy:
    relevance: RelevancePolicy = field(default_factory=RelevancePolicy)
    query_cache_ttl_seconds: int = DEFAULT_QUERY_CACHE_TTL_SECONDS
    namespace_ttl_seconds: int = 4 * DEFAULT_QUERY_CACHE_TTL_SECONDS
    """Namespace counters outlive every cached value (4 × the query TTL)."""
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS
    mmr_lambda: float = DEFAULT_MMR_LAMBDA
    rerank_min_candidates: int = DEFAULT_MIN_CANDIDATES
    rerank_dominance_delta: float = DEFAULT_DOMINANCE_DELTA
    read_memo_entries: int = DEFAULT_MAX_READS
    """Store reads the in-process tier keeps (`engine.retrieval.reads`); 0 turns it off."""


@dataclass(frozen=True, slots=True)
class LayerResult:
    hits: dict[str, list[Hit]]
    cached: bool


def layers_cache_key(
    scope: Scope,
    query: str,
    layers: Sequence[str],
    limit: int,
    token: str,
    as_of: int | None = None,
    fill: bool = False,
) -> str:
    """`memory:query:layers:<scope>:<H32(payload)>:ns:<token>`; ids keep their case."""
    payload = json.dumps(
        {
            "query": query,
            "layers": sorted(layers),
            "limit": limit,
            "filters": scope.filters or {},
            "asOf": as_of,
        }
        | ({"fill": True} if fill else {}),
        sort_keys=True,
        separators=(",", ":"),
    )
    part = scope_key(
        scope.agent_wallet, scope.mode, scope.hai_id, scope.user_address, scope.thread_id
    )
    return f"memory:query:layers:{part}:{h32(payload)}:ns:{token}"


_HIT_FIELDS = tuple(f.name for f in fields(Hit))


def _encode(hits: dict[str, list[Hit]]) -> bytes:
    # field by field: dataclasses.asdict deep-copies every raw item and cost ~2 ms a request
    return json.dumps(
        {k: [{f: getattr(h, f) for f in _HIT_FIELDS} for h in v] for k, v in hits.items()},
        default=str,
    ).encode()


def _decode(blob: bytes) -> dict[str, list[Hit]]:
    data: dict[str, list[dict[str, Any]]] = json.loads(blob)
    return {k: [Hit(**h) for h in v] for k, v in data.items()}


@dataclass(slots=True)
class MemorySearch:
    transcripts: TranscriptStore
    working: WorkingStore
    patterns: PatternStore
    archives: ArchiveStore
    index: VectorIndex
    embedder: Embedder
    cache: QueryCache
    reranker: Reranker | None = None
    access: AccessRecorder | None = None
    relations: RelationStore | None = None
    policy: SearchPolicy = field(default_factory=SearchPolicy)
    reads: ReadMemo | None = None
    """The in-process tier of the text layers' reads; built from the policy when None."""
    spans: LayerSpans | None = None
    """A span per layer and for the query's embedding (traces on); None: no tracing."""

    def __post_init__(self) -> None:
        if self.reads is None and self.policy.read_memo_entries > 0:
            self.reads = ReadMemo(
                ttl_seconds=self.policy.query_cache_ttl_seconds,
                max_entries=self.policy.read_memo_entries,
            )

    async def _embed_query(self, query: str) -> Vector | None:
        if self.spans is not None:
            with self.spans.step("embed query"):
                return await self._embed(query)
        return await self._embed(query)

    async def _embed(self, query: str) -> Vector | None:
        try:
            [vector] = await self.embedder.embed([query], "query")
        except DependencyFailed as exc:
            log.warning("query embedding failed, text layers only: %s", exc)
            return None
        return vector

    def _runners(
        self, q: LayerQuery, layers: Sequence[str], version: str | None
    ) -> dict[str, Callable[[], Awaitable[list[Hit]]]]:
        p = self.policy
        both = "graph" in layers and "vectors" in layers

        def memory(
            layer: str, sources: Sequence[str] | None, ranked: bool
        ) -> Callable[[], Awaitable[list[Hit]]]:
            options = MemoryLayerOptions(
                layer=layer,
                sources=sources,
                ranked=ranked,
                reranker=self.reranker,
                half_life_days=p.half_life_days,
                mmr_lambda=p.mmr_lambda,
                rerank_min_candidates=p.rerank_min_candidates,
                rerank_dominance_delta=p.rerank_dominance_delta,
                version=version,
                relations=self.relations if layer == "graph" else None,
            )
            return lambda: search_memory(self.index, q, options)

        table: dict[str, Callable[[], Awaitable[list[Hit]]]] = {
            "working": lambda: search_working(self.working, q, self.index),
            "scene": lambda: search_scene(self.transcripts, q, self.index),
            "patterns": lambda: search_patterns(self.patterns, q),
            "archives": lambda: search_archives(self.archives, q),
            "graph": memory("graph", ["fact", "entity"], ranked=True),
            # double-ranking rule: with graph present, vectors keeps its raw order
            "vectors": memory("vectors", None, ranked=not both),
        }
        spans = self.spans
        if spans is None:
            return {name: table[name] for name in layers if name in table}
        return {name: _spanned(spans, name, table[name]) for name in layers if name in table}

    async def search(
        self,
        scope: Scope,
        query: str,
        layers: Sequence[str],
        limit: int,
        now_ms: int,
        as_of: int | None = None,
        fill: bool = False,
    ) -> LayerResult:
        """Hits per layer (layers that failed are absent). Bad filters raise `InputRejected`.
        `fill`: only a budget was given, to be filled (`LayerQuery.fill`)."""
        filters = parse_filters(scope.filters)  # a clear error; nothing is dropped silently
        tenant = scope.tenant()
        token, version, *families, shared = await self.cache.tokens(
            [
                [GLOBAL_NAMESPACE, *namespace_chain(scope)],
                [GLOBAL_NAMESPACE, *namespace_chain(tenant)],
                *([GLOBAL_NAMESPACE, *family_chain(tenant, f)] for f in FAMILY_READS),
                [GLOBAL_NAMESPACE, *shared_chain(tenant)],
            ]
        )
        key = layers_cache_key(scope, query, layers, limit, token, as_of, fill) if token else None
        if key is not None:
            blob = await self.cache.get(key)
            if blob is not None:
                return LayerResult(_decode(blob), cached=True)
        # embedded once, while the layers read their candidates (they await it afterwards)
        embedding = asyncio.ensure_future(self._embed_query(query))
        runners = self._runners(
            LayerQuery(
                scope=scope,
                query=query,
                limit=limit,
                vector=None,
                model=self.embedder.model,
                now_ms=now_ms,
                relevance=self.policy.relevance,
                filters=filters,
                as_of=as_of,
                pending=embedding,
                reads=self.reads,
                tokens=replace(ReadTokens(token, version, *families), shared=shared),
                dimension=self.embedder.dimension,
                fill=fill,
            ),
            layers,
            version,
        )
        outcomes = await asyncio.gather(
            *(run() for run in runners.values()), return_exceptions=True
        )
        hits: dict[str, list[Hit]] = {}
        complete = await embedding is not None
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
        """The packed Memory context of reference §6.6."""
        limit, max_items = request.shape()
        fill = request.budget_chars is not None and request.limit is None
        result = await self.search(
            request.scope, request.query, request.layers, limit, now_ms, request.as_of, fill
        )
        packed = pack(
            request.query,
            result.hits,
            layer_order=request.layers,
            max_items=max_items,
            max_item_chars=request.max_item_chars,
            budget_chars=request.budget_chars,
            now_ms=now_ms,
        )
        if self.access is not None:
            self.access.note([i.id for i in packed.items if i.layer in MEMORY_LAYERS and i.id])
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
            raw={k: [dict(h.raw) for h in memories(v)] for k, v in result.hits.items()}
            if request.include_raw
            else None,
            cached=result.cached,
        )

    async def layer_search(self, request: LayerSearchRequest, now_ms: int) -> LayerSearchReply:
        """Raw layer items (no packing), reference §3 output."""
        result = await self.search(
            request.scope, request.query, request.layers, request.limit, now_ms, request.as_of
        )
        # a row that answered as several of its messages is one item, at its best message
        found = {k: memories(v) for k, v in result.hits.items()}
        every = [h for hits in found.values() for h in hits]
        # best first across layers (each layer's score is its own relevance in [0, 1]);
        # unscored hits last, each layer's order kept among equals (a stable sort)
        every.sort(key=lambda h: -1.0 if h.score is None else -h.score)
        return LayerSearchReply(
            query=request.query,
            layers={k: [dict(h.raw) for h in v] for k, v in found.items()},
            totals={k: len(v) for k, v in found.items()},
            items=[_item(h) for h in every],
            cached=result.cached,
        )


def _spanned(
    spans: LayerSpans, name: str, run: Callable[[], Awaitable[list[Hit]]]
) -> Callable[[], Awaitable[list[Hit]]]:
    async def spanned() -> list[Hit]:
        with spans.layer(name):
            return await run()

    return spanned


def _item(hit: Hit) -> ContextItem:
    return ContextItem(
        layer=hit.layer,
        text=hit.text,
        id=hit.id,
        score=hit.score,
        source=hit.source,
        created_at=hit.created_at,
    )
