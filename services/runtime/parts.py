"""What a runtime (`services.runtime.Runtime`) is made of: its stores, typed on the engine's
ports, and builders of its heavy parts, each built at most once (`Lazy`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar, get_args

from engine.derivation import GraphSources
from engine.evals.records import EvalStore
from engine.ingest.extraction.types import Extractor
from engine.ingest.patterns import PatternCounter
from engine.ingest.skills import SkillStore
from engine.ports import (
    ArchiveCids,
    ArchivePinner,
    ArchivePinState,
    ArchiveStore,
    Embedder,
    ItemHistory,
    MemoryStatsReader,
    MemoryStore,
    PatternStore,
    QueryCache,
    RelationStore,
    TranscriptCounter,
    TranscriptHistory,
    TranscriptStore,
    VectorIndex,
    VectorStore,
    WorkingStore,
)
from engine.retrieval.rerank import Reranker
from engine.sealing import TenantKeyStore
from engine.upkeep.compression import SessionTranscripts, Summariser
from engine.upkeep.erasure import UserEraser
from engine.upkeep.item_writes import BulkItemStore
from engine.upkeep.jobs import JobStore
from engine.upkeep.maintenance import MaintenanceStore
from engine.upkeep.sessions import SessionStore

T = TypeVar("T")

Part = Literal["embedder", "reranker", "extractor", "summariser", "pinner", "search"]
"""A heavy part of the runtime: built only when a group uses it."""
PARTS: frozenset[Part] = frozenset(get_args(Part))


class Transcripts(
    TranscriptStore, TranscriptCounter, TranscriptHistory, SessionTranscripts, Protocol
):
    """The transcript store as the groups use it: appends, reads by tenant, by session, by
    agent, and counts."""


class Memory(MemoryStore, MemoryStatsReader, Protocol):
    """The `memory` rows with their aggregate stats."""


class Archives(ArchiveStore, ArchiveCids, Protocol):
    """Archives and where they were pinned."""


class Maintenance(MaintenanceStore, ArchivePinState, Protocol):
    """Maintenance jobs' reads and writes, with the archives' pin state."""


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store of one deployment. `memory` and `items` are the same rows, as are
    `working` and `sessions`; `pattern_layer` is the patterns retrieval layer, `patterns` the
    execution counts behind it."""

    transcripts: Transcripts
    working: WorkingStore
    memory: Memory
    items: BulkItemStore
    relations: RelationStore
    pattern_layer: PatternStore
    patterns: PatternCounter
    skills: SkillStore
    archives: Archives
    maintenance: Maintenance
    jobs: JobStore
    sessions: SessionStore
    evals: EvalStore
    cache: QueryCache
    vectors: VectorStore
    """Durable document vectors by content (`engine.embedding_store`)."""
    eraser: UserEraser
    """Forgets a user: their records in every store above (`engine.upkeep.erasure`)."""
    history: ItemHistory
    """Every change of the long-term items (`engine.history`)."""
    tenant_keys: TenantKeyStore | None = None
    """The tenants' wrapped data keys of sealed events (`engine.sealing`)."""
    graph: GraphSources | None = None
    """The evidence of the graph rows: what forgetting an item removes from them
    (`engine.derivation`; None: forgetting an item leaves the graph as it is)."""


@dataclass(frozen=True, slots=True)
class Parts:
    """Builders of the heavy parts; each is called at most once per runtime. `index` builds
    the vector index for the embedder's vector space (it may reach the database)."""

    embedder: Callable[[], Embedder]
    reranker: Callable[[], Reranker | None]
    extractor: Callable[[], Extractor | None]
    summariser: Callable[[], Summariser]
    pinner: Callable[[], ArchivePinner | None]
    index: Callable[[Embedder], Awaitable[VectorIndex]]


class NotPrepared(RuntimeError):
    """A part that needs I/O to build (the search, for its vector index) was used before
    `Runtime.prepare` built it: the group must declare it in `services.groups.app.NEEDS`."""


class Lazy(Generic[T]):
    """A value built on first use, then kept."""

    __slots__ = ("_build", "_built", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._built = False
        self._value: T | None = None

    @property
    def built(self) -> bool:
        return self._built

    def get(self) -> T:
        if not self._built:
            self._value, self._built = self._build(), True
        return self._value  # type: ignore[return-value]  # T may itself be optional
