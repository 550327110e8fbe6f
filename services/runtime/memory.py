"""The in-memory build of the composition root: every store is an in-memory adapter of
`engine.adapters`, the embedder is the offline `HashingEmbedder` unless one is given, and
nothing is opened. With FastStream's `TestKafkaBroker` it runs every consumer group without
servers (the fast test tier, `tests/groups/`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryArchiveMaintenance,
    InMemoryArchiveStore,
    InMemoryEvalStore,
    InMemoryItemHistory,
    InMemoryItemStore,
    InMemoryJobStore,
    InMemoryPatternCounter,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryRelationStore,
    InMemorySkillStore,
    InMemoryTranscriptStore,
    InMemoryVectorStore,
    InMemoryWorkingBuffers,
)
from engine.adapters.memory.erasure import Droppable, InMemoryUserEraser
from engine.adapters.memory.graph_sources import InMemoryGraphSources
from engine.adapters.memory.tenant_keys import InMemoryTenantKeys
from engine.ingest.extraction.rules import RuleBasedExtractor
from engine.ingest.extraction.types import Extractor
from engine.ports import ArchivePinner, Embedder, Reranker, VectorIndex
from engine.retrieval.vector_index import ExactVectorIndex
from engine.upkeep.compression import RuleSummariser, Summariser
from services.runtime import PARTS, Part, Parts, Runtime, Stores
from services.runtime.threads import limit_blas_threads
from services.settings import Settings


def memory_stores() -> Stores:
    """Fresh, empty in-memory stores sharing rows as the MongoDB collections do."""
    memory = InMemoryItemStore()
    transcripts = InMemoryTranscriptStore()
    working = InMemoryWorkingBuffers()
    relations = InMemoryRelationStore()
    pattern_layer = InMemoryPatternStore()
    patterns = InMemoryPatternCounter(mirror=pattern_layer)
    skills = InMemorySkillStore()
    archives = InMemoryArchiveStore()
    history = InMemoryItemHistory()
    kinds: dict[str, Droppable] = {
        "memory": memory,
        "transcripts": transcripts,
        "working": working,
        "relations": relations,
        "patterns": pattern_layer,
        "archives": archives,
        "skills": skills,
        "history": history,
    }
    return Stores(
        transcripts=transcripts,
        working=working,
        memory=memory,
        items=memory,
        relations=relations,
        pattern_layer=pattern_layer,
        patterns=patterns,
        skills=skills,
        archives=archives,
        maintenance=InMemoryArchiveMaintenance(memory, archives),
        jobs=InMemoryJobStore(),
        sessions=working,
        evals=InMemoryEvalStore(),
        cache=InMemoryQueryCache(),
        vectors=InMemoryVectorStore(),
        # the counter's rows are the patterns layer's (one collection in MongoDB)
        eraser=InMemoryUserEraser(kinds, also=(patterns,)),
        history=history,
        tenant_keys=InMemoryTenantKeys(),
        graph=InMemoryGraphSources(memory, relations),
    )


@asynccontextmanager
async def memory_runtime(
    settings: Settings | None = None,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    extractor: Extractor | None = None,
    summariser: Summariser | None = None,
    pinner: ArchivePinner | None = None,
    stores: Stores | None = None,
    needs: Iterable[Part] = PARTS,
) -> AsyncIterator[Runtime]:
    """A runtime on fresh in-memory stores (or `stores`). Unless given: the hashing embedder,
    no reranker, the rule-based extractor (none when `settings.extraction.extractor` is
    "none"), the rule-based summariser and no archive pinner. The `needs` parts are built up
    front."""
    config = settings or Settings()
    limit_blas_threads(config.search.blas_threads)
    built = stores or memory_stores()

    async def index(model: Embedder) -> VectorIndex:
        return ExactVectorIndex(
            built.memory,
            max_bytes=config.search.state_max_mb << 20,
            margin_ms=config.search.state_margin_ms,
            recheck_ms=config.search.query_cache_ttl_seconds * 1000,
        )

    def rules() -> Extractor | None:
        if extractor is not None:
            return extractor
        return None if config.extraction.extractor == "none" else RuleBasedExtractor()

    parts = Parts(
        embedder=lambda: embedder or HashingEmbedder(),
        reranker=lambda: reranker,
        extractor=rules,
        summariser=lambda: summariser or RuleSummariser(),
        pinner=lambda: pinner,
        index=index,
    )
    rt = Runtime(config, built, parts)
    await rt.prepare(needs)
    yield rt
