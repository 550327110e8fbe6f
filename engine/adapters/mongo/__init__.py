"""MongoDB adapters (PyMongo's native async API, `AsyncMongoClient`), one module per store.

Documents use the reference's camelCase field names (`documents`). Natural keys are the `_id`
(the session id within its tenant, `ScopeFields.document_key`, for transcript heads and working
sessions; that key and the turn id for a transcript's turns; `vectorId` for memory rows), so a
turn's insert is idempotent: a redelivered turn collides on `_id` and is reported as "already
applied". A working buffer refuses a turn by its guard (`engine.turn_guard`), a pattern's
count by `turnIds: {$ne: turnId}` (`documents.append_once`).

`schema.ensure_schema` creates every collection and index once, sequentially, before any
consumer runs (the local MongoDB-wire server deadlocks when index builds race inserts on a new
collection, docs/operations.md#local-servers; it is good practice anyway).

| module | store | collection |
| --- | --- | --- |
| `transcripts` | `MongoTranscriptStore` | `session_transcripts` (heads), `transcript_turns` |
| `working` | `MongoWorkingStore` | `sessions` (the working buffer; also the sessions API's port) |
| `sessions` | `MongoSessionStore` | `sessions` (the sessions API's reads and edits; a base) |
| `memory_rows` | `MongoMemoryStore` | `memory` |
| `items` | `MongoItemStore` | `memory` (single rows) |
| `history` | `MongoItemHistory` | `memory_history` (every change of an item) |
| `relations` | `MongoRelationStore` | `relations` |
| `patterns` | `MongoPatternStore` | `patterns` (layer reads) |
| `pattern_counts` | `MongoPatternCounter` | `patterns` (per-turn counts) |
| `skills` | `MongoSkillStore` | `skills` |
| `archives` | `MongoArchiveStore` | `archives` |
| `jobs` | `MongoJobStore`, `MongoMaintenanceStore` | `memory_jobs`, `memory` |
| `evals` | `MongoEvalStore` | `memory_evals` |
| `vectors` | `MongoVectorStore` | `embeddings` (content-addressed document vectors) |
"""

from engine.adapters.mongo.archives import MongoArchiveStore
from engine.adapters.mongo.documents import Doc, tenant_query
from engine.adapters.mongo.evals import EVALS, MongoEvalStore
from engine.adapters.mongo.evals import ensure_indexes as ensure_eval_indexes
from engine.adapters.mongo.history import MongoItemHistory
from engine.adapters.mongo.items import MongoItemStore
from engine.adapters.mongo.jobs import MongoJobStore, MongoMaintenanceStore
from engine.adapters.mongo.memory_rows import MongoMemoryStore, row_of
from engine.adapters.mongo.pattern_counts import MongoPatternCounter
from engine.adapters.mongo.patterns import MongoPatternStore
from engine.adapters.mongo.relations import MongoRelationStore
from engine.adapters.mongo.schema import (
    ARCHIVES,
    EMBEDDINGS,
    HISTORY,
    INDEXES,
    JOBS,
    MEMORY,
    PATTERNS,
    RELATIONS,
    SESSIONS,
    SKILLS,
    TRANSCRIPT_TURNS,
    TRANSCRIPTS,
    ensure_pattern_indexes,
    ensure_schema,
)
from engine.adapters.mongo.sessions import MongoSessionStore
from engine.adapters.mongo.skills import MongoSkillStore, skill_document
from engine.adapters.mongo.transcripts import MongoTranscriptStore
from engine.adapters.mongo.vectors import MongoVectorStore
from engine.adapters.mongo.working import WORKING_TURN_IDS_KEPT, MongoWorkingStore

__all__ = [
    "ARCHIVES",
    "EMBEDDINGS",
    "EVALS",
    "HISTORY",
    "INDEXES",
    "JOBS",
    "MEMORY",
    "PATTERNS",
    "RELATIONS",
    "SESSIONS",
    "SKILLS",
    "TRANSCRIPTS",
    "TRANSCRIPT_TURNS",
    "WORKING_TURN_IDS_KEPT",
    "Doc",
    "MongoArchiveStore",
    "MongoEvalStore",
    "MongoItemHistory",
    "MongoItemStore",
    "MongoJobStore",
    "MongoMaintenanceStore",
    "MongoMemoryStore",
    "MongoPatternCounter",
    "MongoPatternStore",
    "MongoRelationStore",
    "MongoSessionStore",
    "MongoSkillStore",
    "MongoTranscriptStore",
    "MongoVectorStore",
    "MongoWorkingStore",
    "ensure_eval_indexes",
    "ensure_pattern_indexes",
    "ensure_schema",
    "row_of",
    "skill_document",
    "tenant_query",
]
