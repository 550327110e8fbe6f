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

TRANSCRIPTS = "session_transcripts"
SESSIONS = "sessions"
MEMORY = "memory"
PATTERNS = "patterns"
ARCHIVES = "archives"
RELATIONS = "relations"
JOBS = "memory_jobs"
SKILLS = "skills"
EMBEDDINGS = "embeddings"

_TENANT = [("agentWallet", ASCENDING), ("userAddress", ASCENDING)]
JOB_INDEXES = (
    IndexModel([("type", ASCENDING), ("status", ASCENDING), ("createdAt", DESCENDING)]),
    IndexModel([("status", ASCENDING), ("createdAt", DESCENDING)]),
)
INDEXES: Mapping[str, Sequence[IndexModel]] = {
    TRANSCRIPTS: (
        IndexModel([*_TENANT, ("threadId", ASCENDING), ("updatedAt", DESCENDING)]),
        IndexModel([*_TENANT, ("mode", ASCENDING), ("haiId", ASCENDING), ("threadId", ASCENDING)]),
        IndexModel([("agentWallet", ASCENDING), ("createdAt", DESCENDING)]),
    ),
    SESSIONS: (
        IndexModel([*_TENANT, ("threadId", ASCENDING), ("lastAccessedAt", DESCENDING)]),
        IndexModel([("expiresAt", ASCENDING)], expireAfterSeconds=0),
    ),
    MEMORY: (
        IndexModel([*_TENANT, ("source", ASCENDING), ("metadata.status", ASCENDING)]),
        IndexModel([*_TENANT, ("mode", ASCENDING), ("haiId", ASCENDING)]),
        IndexModel([("agentWallet", ASCENDING), ("createdAt", DESCENDING)]),
        # facts only (every slot query names `source: "fact"`): a session row, most of the
        # collection, writes no entry here (issue 15; a `metadata.turnId` index no query
        # used went too — each index entry costs the batched insert of every turn)
        IndexModel(
            [*_TENANT, ("metadata.slot", ASCENDING)],
            name="fact_slots",
            partialFilterExpression={"source": "fact"},
        ),
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
}
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
    """Create missing collections, then every index, one at a time. Idempotent."""
    return await create_indexes(db, INDEXES)


async def ensure_pattern_indexes(db: AsyncDatabase[Doc]) -> None:
    """Create the collections and indexes of patterns and skills, one at a time. Idempotent."""
    await create_indexes(db, PATTERN_INDEXES)
