"""Collection names and indexes of the MongoDB adapters.

`ensure_schema` (and `ensure_pattern_indexes`) create every collection and index once,
sequentially, before any consumer runs (the local MongoDB-wire server deadlocks when index
builds race inserts on a new collection, docs/operations.md#local-servers; it is good practice
anyway). The eval collection has its own (`engine.adapters.mongo.evals.ensure_indexes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.database import AsyncDatabase

from engine.adapters.mongo.documents import Doc
from engine.adapters.mongo.transcript_layout import migrate_transcripts

TRANSCRIPTS = "session_transcripts"
"""One small head per thread (scope, first and last turn time): `engine.adapters.mongo.
transcripts`."""
TRANSCRIPT_TURNS = "transcript_turns"
"""One document per turn of a transcript (issue 29: no document grows with its thread)."""
LAYOUTS = "schema_layouts"
"""Which data migrations `ensure_schema` has finished (one document each, by `_id`)."""
SESSIONS = "sessions"
MEMORY = "memory"
PATTERNS = "patterns"
ARCHIVES = "archives"
RELATIONS = "relations"
JOBS = "memory_jobs"
SKILLS = "skills"
EMBEDDINGS = "embeddings"
HISTORY = "memory_history"
EPOCHS = "memory_epochs"

_TENANT = [("agentWallet", ASCENDING), ("userAddress", ASCENDING)]
JOB_INDEXES = (
    IndexModel([("type", ASCENDING), ("status", ASCENDING), ("createdAt", DESCENDING)]),
    IndexModel([("status", ASCENDING), ("createdAt", DESCENDING)]),
)
INDEXES: Mapping[str, Sequence[IndexModel]] = {
    # Every index is written by every turn: a collection a turn writes keeps one index a
    # query needs per access path. Queries by agent (jobs, stats), or by tenant with a mode,
    # HAI id or sort, use the tenant prefix of the first index (issue 15: on the MongoDB-wire
    # server here, each secondary index halved the rate of batched row inserts).
    TRANSCRIPTS: (IndexModel([*_TENANT, ("threadId", ASCENDING), ("updatedAt", DESCENDING)]),),
    # a thread's turns in order; inserted once per turn, read by thread (never by tenant:
    # an erasure finds the user's threads by their heads)
    TRANSCRIPT_TURNS: (
        IndexModel(
            [("thread", ASCENDING), ("at", ASCENDING), ("seq", ASCENDING)], name="thread_at_seq"
        ),
    ),
    LAYOUTS: (),
    SESSIONS: (
        IndexModel([*_TENANT, ("threadId", ASCENDING), ("lastAccessedAt", DESCENDING)]),
        IndexModel([("expiresAt", ASCENDING)], expireAfterSeconds=0),
    ),
    MEMORY: (
        # also serves a user's read widened to the agent's knowledge: each branch of its
        # `$or` (documents.tenant_query) is a prefix (agent, user) / (agent, null, source)
        IndexModel([*_TENANT, ("source", ASCENDING), ("metadata.status", ASCENDING)]),
        # facts only (every slot query names `source: "fact"`): a turn row, most of the
        # collection, writes no entry here
        IndexModel(
            [*_TENANT, ("metadata.slot", ASCENDING)],
            name="fact_slots",
            partialFilterExpression={"source": "fact"},
        ),
        # the rows a search process reads back after a write (engine.adapters.mongo.changes)
        IndexModel([*_TENANT, ("changedAt", ASCENDING)], name="tenant_changes"),
    ),
    RELATIONS: (
        IndexModel([*_TENANT, ("sourceId", ASCENDING)]),
        IndexModel([*_TENANT, ("targetId", ASCENDING)]),
    ),
    JOBS: JOB_INDEXES,
    PATTERNS: (
        IndexModel([*_TENANT, ("status", ASCENDING), ("successRate", DESCENDING)]),
        IndexModel([("agentWallet", ASCENDING), ("patternType", ASCENDING)]),
    ),
    ARCHIVES: (
        IndexModel([*_TENANT, ("status", ASCENDING), ("createdAt", DESCENDING)]),
        IndexModel([("dateRange.start", ASCENDING), ("dateRange.end", ASCENDING)]),
    ),
    EMBEDDINGS: (),  # read and written by `_id` alone
    EPOCHS: (),  # one document per agent, by `_id`
    # one item's changes in order (written once per change, read by item within its tenant)
    HISTORY: (
        IndexModel(
            [*_TENANT, ("itemId", ASCENDING), ("at", ASCENDING), ("seq", ASCENDING)],
            name="tenant_item_at",
        ),
    ),
}
RETIRED: Mapping[str, Sequence[str]] = {
    TRANSCRIPT_TURNS: ("thread_at",),  # now `thread_at_seq`
    TRANSCRIPTS: (
        "agentWallet_1_userAddress_1_mode_1_haiId_1_threadId_1",
        "agentWallet_1_createdAt_-1",
    ),
    MEMORY: (
        "agentWallet_1_userAddress_1_mode_1_haiId_1",
        "agentWallet_1_createdAt_-1",
        "metadata.turnId_1",
        "agentWallet_1_userAddress_1_metadata.slot_1",  # now the partial `fact_slots`
    ),
}
"""Indexes earlier versions created (by their default names): `ensure_schema` drops them
where they exist, so an upgraded database stops paying for them on every write."""
PATTERN_INDEXES: Mapping[str, Sequence[IndexModel]] = {
    PATTERNS: (
        IndexModel(
            [*_TENANT, ("successRate", DESCENDING), ("executionCount", DESCENDING)],
            name="tenant_success_executions",
        ),
    ),
    SKILLS: (
        IndexModel(
            [*_TENANT, ("successRate", DESCENDING), ("usageCount", DESCENDING)],
            name="tenant_success_usage",
        ),
        IndexModel([("patternId", ASCENDING)], name="pattern"),
    ),
}
"""The indexes the pattern counter and the skill store read by (named)."""


async def create_indexes(
    db: AsyncDatabase[Doc], indexes: Mapping[str, Sequence[IndexModel]]
) -> list[str]:
    """Create the missing collections of `indexes`, then every index, one at a time.
    Idempotent; returns the collections created."""
    existing = set(await db.list_collection_names())
    created: list[str] = []
    for name in indexes:
        if name not in existing:
            await db.create_collection(name)
            created.append(name)
    for name, models in indexes.items():
        for model in models:
            await db[name].create_indexes([model])
    return created


async def ensure_schema(db: AsyncDatabase[Doc]) -> list[str]:
    """Create missing collections, then every index, one at a time, drop the `RETIRED` ones
    that exist, and migrate data written by an earlier layout (`transcript_layout`).
    Idempotent."""
    created = await create_indexes(db, INDEXES)
    await migrate_transcripts(
        db[TRANSCRIPTS], db[TRANSCRIPT_TURNS], db[LAYOUTS], fresh=TRANSCRIPTS in created
    )
    for name, retired in RETIRED.items():
        present = set(await db[name].index_information())
        for index in retired:
            if index in present:
                await db[name].drop_index(index)
    return created


async def ensure_pattern_indexes(db: AsyncDatabase[Doc]) -> None:
    """Create the collections and indexes of patterns and skills, one at a time. Idempotent."""
    await create_indexes(db, PATTERN_INDEXES)
