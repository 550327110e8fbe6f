"""The engine's read and write paths over fresh in-memory ports (no infrastructure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.adapters.memory import (
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.turns import TurnRecorder
from engine.ports import Embedder
from engine.retrieval.search import MemorySearch
from engine.retrieval.usage import AccessRecorder
from engine.retrieval.vector_index import ExactVectorIndex


@dataclass
class InMemoryPorts:
    """One set of empty in-memory stores shared by the recorder and the search built from it."""

    embedder: Embedder
    transcripts: InMemoryTranscriptStore = field(default_factory=InMemoryTranscriptStore)
    working: InMemoryWorkingStore = field(default_factory=InMemoryWorkingStore)
    memory: InMemoryMemoryStore = field(default_factory=InMemoryMemoryStore)
    cache: InMemoryQueryCache = field(default_factory=InMemoryQueryCache)

    def recorder(self, *, deferred: bool = False) -> TurnRecorder:
        """`deferred`: turns stored with pending vectors, as the embedding stage has them."""
        return TurnRecorder(
            self.transcripts, self.working, self.memory, self.embedder, deferred=deferred
        )

    def search(self, access: AccessRecorder | None = None) -> MemorySearch:
        """`MemorySearch` over these stores, fresh pattern and archive stores, exact vectors."""
        return MemorySearch(
            transcripts=self.transcripts,
            working=self.working,
            patterns=InMemoryPatternStore(),
            archives=InMemoryArchiveStore(),
            index=ExactVectorIndex(self.memory),
            embedder=self.embedder,
            cache=self.cache,
            access=access,
        )
