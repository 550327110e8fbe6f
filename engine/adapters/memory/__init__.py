"""In-memory implementations of every port, for unit tests of the engine, one module per store.

They follow the same contracts as the real adapters (the contract suite in
`tests/contract/` runs against both), including idempotent appends and tenant filtering.
"""

from engine.adapters.memory.archives import InMemoryArchiveStore
from engine.adapters.memory.cache import InMemoryQueryCache
from engine.adapters.memory.embedder import HashingEmbedder
from engine.adapters.memory.evals import InMemoryEvalStore
from engine.adapters.memory.history import InMemoryItemHistory
from engine.adapters.memory.items import InMemoryItemStore
from engine.adapters.memory.jobs import (
    InMemoryArchiveMaintenance,
    InMemoryJobStore,
    InMemoryMaintenanceStore,
)
from engine.adapters.memory.memory_rows import InMemoryMemoryStore
from engine.adapters.memory.pattern_counts import InMemoryPatternCounter, InMemorySkillStore
from engine.adapters.memory.patterns import InMemoryPatternStore
from engine.adapters.memory.relations import InMemoryRelationStore
from engine.adapters.memory.sessions import InMemorySessionStore
from engine.adapters.memory.transcripts import InMemoryTranscriptStore
from engine.adapters.memory.vectors import InMemoryVectorStore
from engine.adapters.memory.working import InMemoryWorkingStore
from engine.adapters.memory.working_buffers import InMemoryWorkingBuffers

__all__ = [
    "HashingEmbedder",
    "InMemoryArchiveMaintenance",
    "InMemoryArchiveStore",
    "InMemoryEvalStore",
    "InMemoryItemHistory",
    "InMemoryItemStore",
    "InMemoryJobStore",
    "InMemoryMaintenanceStore",
    "InMemoryMemoryStore",
    "InMemoryPatternCounter",
    "InMemoryPatternStore",
    "InMemoryQueryCache",
    "InMemoryRelationStore",
    "InMemorySessionStore",
    "InMemorySkillStore",
    "InMemoryTranscriptStore",
    "InMemoryVectorStore",
    "InMemoryWorkingBuffers",
    "InMemoryWorkingStore",
]
