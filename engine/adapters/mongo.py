"""MongoDB adapters (PyMongo's native async API, `AsyncMongoClient`).

Documents use the reference's camelCase field names. Natural keys are the `_id` (the session
id within its tenant, `ScopeFields.document_key`, for transcripts and working sessions;
`vectorId` for memory rows), so an upsert
guarded by `turnIds: {$ne: turnId}` is an idempotent append: a redelivered turn matches no
document, the upsert then collides on `_id` and is reported as "already applied".

`ensure_schema` creates every collection and index once, sequentially, before any consumer
runs (the local MongoDB-wire server deadlocks when index builds race inserts on a new
collection, docs/operations.md#local-servers; it is good practice anyway).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from bson.binary import Binary, BinaryVectorDtype
from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo_jobs import JOB_INDEXES, JOBS
from engine.errors import DependencyFailed
from engine.ports import VectorStats
from engine.records import (
    INACTIVE_STATUSES,
    ArchiveRecord,
    MemoryRow,
    PatternRecord,
    RelationRecord,
    ScopeFields,
    StoredMessage,
    Transcript,
    TranscriptAppend,
    TurnVector,
    WorkingAppend,
    WorkingSession,
)
from engine.scoping import TenantFilter

log = logging.getLogger(__name__)

Doc = dict[str, Any]

TRANSCRIPTS = "session_transcripts"
SESSIONS = "sessions"
MEMORY = "memory"
PATTERNS = "patterns"
ARCHIVES = "archives"
RELATIONS = "relations"
WORKING_TURN_VECTORS = 6
"""Turn vectors kept per working buffer (about the turns its 12 lines come from)."""
WORKING_TURN_IDS_KEPT = 1000
"""Turn ids remembered per working buffer for idempotency (older redeliveries re-append)."""

_TENANT = [("agentWallet", ASCENDING), ("userAddress", ASCENDING)]
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
        IndexModel([("metadata.turnId", ASCENDING)]),
        IndexModel([*_TENANT, ("metadata.slot", ASCENDING)]),
    ),
    RELATIONS: (
        IndexModel([*_TENANT, ("sourceId", ASCENDING)]),
        IndexModel([*_TENANT, ("targetId", ASCENDING)]),
    ),
    JOBS: tuple(JOB_INDEXES),
    PATTERNS: (
        IndexModel([*_TENANT, ("status", ASCENDING), ("successRate", DESCENDING)]),
        IndexModel([("agentWallet", ASCENDING), ("patternType", ASCENDING)]),
    ),
    ARCHIVES: (
        IndexModel([*_TENANT, ("status", ASCENDING), ("createdAt", DESCENDING)]),
        IndexModel([("dateRange.start", ASCENDING), ("dateRange.end", ASCENDING)]),
    ),
}


async def ensure_schema(db: AsyncDatabase[Doc]) -> list[str]:
    """Create missing collections, then every index, one at a time. Idempotent."""
    existing = set(await db.list_collection_names())
    created: list[str] = []
    for name in INDEXES:
        if name not in existing:
            await db.create_collection(name)
            created.append(name)
    for name, models in INDEXES.items():
        for model in models:
            await db[name].create_indexes([model])
    return created


def _scope_doc(scope: ScopeFields) -> Doc:
    return {
        "agentWallet": scope.agent_wallet,
        "userAddress": scope.user_address,
        "threadId": scope.thread_id,
        "mode": scope.mode,
        "haiId": scope.hai_id,
        "scopeKind": scope.scope_kind,
        "scopeId": scope.scope_id,
    }


def _scope_of(doc: Mapping[str, Any]) -> ScopeFields:
    return ScopeFields(
        agent_wallet=doc["agentWallet"],
        user_address=doc.get("userAddress"),
        thread_id=doc.get("threadId"),
        mode=doc.get("mode"),
        hai_id=doc.get("haiId"),
    )


def tenant_query(where: TenantFilter) -> Doc:
    """The Mongo filter of a tenant filter (`userAddress: None` matches user-less rows)."""
    users = where.users
    query: Doc = {
        "agentWallet": where.agent_wallet,
        "userAddress": users[0] if len(users) == 1 else {"$in": list(users)},
    }
    modes = where.modes
    if modes is not None:
        query["mode"] = modes[0] if len(modes) == 1 else {"$in": list(modes)}
    if where.hai_id is not None:
        query["haiId"] = where.hai_id
    if where.thread_id is not None:
        query["threadId"] = where.thread_id
    return query


def _agent_query(agent_wallet: str, user_address: str | None) -> Doc:
    """Every row of the agent, or of one of its users (admin aggregates only)."""
    query: Doc = {"agentWallet": agent_wallet}
    if user_address is not None:
        query["userAddress"] = user_address
    return query


def _date(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _message_doc(m: StoredMessage) -> Doc:
    doc: Doc = {"role": m.role, "content": m.content, "timestamp": m.timestamp}
    if m.tool_calls is not None:
        doc["toolCalls"] = m.tool_calls
    if m.turn_id is not None:
        doc["turnId"] = m.turn_id
    return doc


def _turn_vector_doc(v: TurnVector) -> Doc:
    return {"turnId": v.turn_id, "embedding": _vector(v.embedding), "model": v.model}


def _turn_vector_of(doc: Mapping[str, Any]) -> TurnVector:
    return TurnVector(doc["turnId"], _unvector(doc["embedding"]), doc.get("model", ""))


def _message_of(doc: Mapping[str, Any]) -> StoredMessage:
    return StoredMessage(
        role=doc["role"],
        content=doc["content"],
        timestamp=int(doc["timestamp"]),
        tool_calls=doc.get("toolCalls"),
        turn_id=doc.get("turnId"),
    )


class MongoTranscriptStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[TRANSCRIPTS]

    async def append(self, turn: TranscriptAppend) -> bool:
        update: Doc = {
            "$push": {
                "messages": {
                    "$each": [_message_doc(m) for m in turn.messages],
                    "$sort": {"timestamp": 1},
                },
                "turnIds": turn.turn_id,
                **({"turnVectors": _turn_vector_doc(turn.vector)} if turn.vector else {}),
            },
            "$setOnInsert": {"sessionId": turn.session_id, **_scope_doc(turn.scope)},
            "$min": {"createdAt": turn.at},
            "$max": {"updatedAt": turn.at},
            "$inc": {"tokenCount": turn.token_count},
        }
        sets: Doc = {f"metadata.{k}": v for k, v in turn.metadata.items()}
        if turn.summary is not None:
            sets["summary"] = turn.summary
        if sets:
            update["$set"] = sets
        try:
            result = await self._col.update_one(
                {"_id": turn.scope.document_key(turn.session_id), "turnIds": {"$ne": turn.turn_id}},
                update,
                upsert=True,
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript append failed: {exc}") from exc
        return result.upserted_id is not None or result.modified_count == 1

    async def recent(self, where: TenantFilter, limit: int) -> list[Transcript]:
        try:
            cursor = self._col.find(tenant_query(where)).sort("updatedAt", DESCENDING).limit(limit)
            docs = await cursor.to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc
        return self._transcripts(docs)

    async def of_session(self, where: TenantFilter, session_id: str) -> Transcript | None:
        """The newest transcript of `session_id` the filter admits (`SessionTranscripts`)."""
        query = {**tenant_query(where), "sessionId": session_id}
        try:
            cursor = self._col.find(query).sort("updatedAt", DESCENDING).limit(1)
            docs = await cursor.to_list(length=1)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc
        found = self._transcripts(docs)
        return found[0] if found else None

    async def count(self, agent_wallet: str, user_address: str | None = None) -> int:
        """Transcripts of the agent (every user when `user_address` is None)."""
        try:
            return await self._col.count_documents(_agent_query(agent_wallet, user_address))
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript count failed: {exc}") from exc

    async def of_agent(self, agent: str, since: int) -> list[Transcript]:
        """Every transcript of the agent (all users) updated since `since` (ms), for jobs."""
        query = {"agentWallet": agent, "updatedAt": {"$gte": since}}
        try:
            docs = await self._col.find(query).to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc
        return self._transcripts(docs)

    @staticmethod
    def _transcripts(docs: list[Doc]) -> list[Transcript]:
        return [
            Transcript(
                session_id=d["sessionId"],
                scope=_scope_of(d),
                messages=[_message_of(m) for m in d.get("messages", [])],
                summary=d.get("summary"),
                token_count=int(d.get("tokenCount", 0)),
                created_at=int(d["createdAt"]),
                updated_at=int(d["updatedAt"]),
                turn_vectors=[_turn_vector_of(v) for v in d.get("turnVectors", [])],
                metadata=dict(d.get("metadata") or {}),
            )
            for d in docs
        ]


class MongoWorkingStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[SESSIONS]

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        update: Doc = {
            "$push": {
                "workingMemory.context": {"$each": lines.lines, "$slice": -keep},
                "turnIds": {"$each": [lines.turn_id], "$slice": -WORKING_TURN_IDS_KEPT},
                **(
                    {
                        "workingMemory.vectors": {
                            "$each": [_turn_vector_doc(lines.vector)],
                            "$slice": -WORKING_TURN_VECTORS,
                        }
                    }
                    if lines.vector
                    else {}
                ),
            },
            "$setOnInsert": {
                "sessionId": lines.session_id,
                "compressed": False,
                **_scope_doc(lines.scope),
            },
            "$min": {"createdAt": lines.at},
            "$max": {"lastAccessedAt": lines.at, "expiresAt": _date(lines.expires_at)},
        }
        if lines.state:
            update["$set"] = {f"workingMemory.state.{k}": v for k, v in lines.state.items()}
        try:
            result = await self._col.update_one(
                {
                    "_id": lines.scope.document_key(lines.session_id),
                    "turnIds": {"$ne": lines.turn_id},
                },
                update,
                upsert=True,
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"working append failed: {exc}") from exc
        return result.upserted_id is not None or result.modified_count == 1

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingSession]:
        try:
            cursor = (
                self._col.find(tenant_query(where), {"turnIds": 0})
                .sort("lastAccessedAt", DESCENDING)
                .limit(limit)
            )
            docs = await cursor.to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"working read failed: {exc}") from exc
        out: list[WorkingSession] = []
        for d in docs:
            memory = d.get("workingMemory") or {}
            out.append(
                WorkingSession(
                    session_id=d["sessionId"],
                    scope=_scope_of(d),
                    lines=list(reversed(memory.get("context") or [])),
                    state=dict(memory.get("state") or {}),
                    last_accessed_at=int(d["lastAccessedAt"]),
                    created_at=int(d["createdAt"]),
                    turn_vectors=[_turn_vector_of(v) for v in memory.get("vectors") or []],
                )
            )
        return out


def row_of(doc: Mapping[str, Any]) -> MemoryRow:
    """The row of a stored `memory` document (the inverse of `MongoMemoryStore.document`)."""
    return MemoryRow(
        vector_id=doc["vectorId"],
        scope=_scope_of(doc),
        content=doc["content"],
        embedding=_unvector(doc["embedding"]),
        embedding_model=doc.get("embeddingModel", ""),
        source=doc["source"],
        created_at=int(doc["createdAt"]),
        metadata=dict(doc.get("metadata") or {}),
        decay_score=float(doc.get("decayScore", 1.0)),
        access_count=int(doc.get("accessCount", 0)),
        invalid_at=doc.get("invalidAt"),
        superseded_by=doc.get("supersededBy"),
    )


def _vector(embedding: np.ndarray[Any, Any]) -> Binary:
    return Binary.from_vector(embedding.astype(np.float32).tolist(), BinaryVectorDtype.FLOAT32)


def _unvector(value: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    if isinstance(value, Binary):
        # BSON vector: 1 byte dtype, 1 byte padding, then little-endian float32 values
        return np.frombuffer(bytes(value)[2:], dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


class MongoMemoryStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[MEMORY]

    @staticmethod
    def document(row: MemoryRow) -> Doc:
        """The stored form of a row (also what replay verification compares)."""
        return {
            "_id": row.vector_id,
            "vectorId": row.vector_id,
            **_scope_doc(row.scope),
            "content": row.content,
            "embedding": _vector(row.embedding),
            "embeddingModel": row.embedding_model,
            "embeddingDim": row.embedding_dim,
            "source": row.source,
            "decayScore": row.decay_score,
            "accessCount": row.access_count,
            "lastAccessedAt": row.created_at,
            "createdAt": row.created_at,
            "updatedAt": row.created_at,
            "validAt": row.created_at,
            "invalidAt": row.invalid_at,
            "supersededBy": row.superseded_by,
            "metadata": {"status": "active", **row.metadata},
        }

    async def insert_if_absent(self, row: MemoryRow) -> bool:
        try:
            result = await self._col.update_one(
                {"_id": row.vector_id}, {"$setOnInsert": self.document(row)}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"memory insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def exists(self, vector_id: str) -> bool:
        try:
            return await self._col.find_one({"_id": vector_id}, {"_id": 1}) is not None
        except PyMongoError as exc:
            raise DependencyFailed(f"memory read failed: {exc}") from exc

    async def status_of(self, vector_id: str) -> str | None:
        try:
            doc = await self._col.find_one({"_id": vector_id}, {"metadata.status": 1})
        except PyMongoError as exc:
            raise DependencyFailed(f"memory read failed: {exc}") from exc
        if doc is None:
            return None
        status = (doc.get("metadata") or {}).get("status", "active")
        return status if isinstance(status, str) else "active"

    async def revive(self, vector_id: str, at: int) -> bool:
        try:
            result = await self._col.update_one(
                {"_id": vector_id, "metadata.status": "deleted"},
                {
                    "$set": {
                        "metadata.status": "active",
                        "createdAt": at,
                        "validAt": at,
                        "updatedAt": at,
                        "decayScore": 1.0,
                    },
                    "$unset": {"metadata.deletedAt": ""},
                },
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"memory revive failed: {exc}") from exc
        return result.modified_count == 1

    async def bump_access(self, vector_ids: Sequence[str], at: int) -> int:
        if not vector_ids:
            return 0
        try:
            result = await self._col.update_many(
                {"_id": {"$in": list(vector_ids)}},
                {"$inc": {"accessCount": 1}, "$max": {"lastAccessedAt": at}},
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"access bump failed: {exc}") from exc
        return result.modified_count

    async def active_rows(
        self,
        where: TenantFilter,
        *,
        sources: Sequence[str] | None = None,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        query = tenant_query(where)
        hidden = ["deleted"] if include_superseded else list(INACTIVE_STATUSES)
        query["metadata.status"] = {"$nin": hidden}
        if sources is not None:
            query["source"] = {"$in": list(sources)}
        return await self._rows(query)

    async def slot_rows(self, where: TenantFilter, slot: str) -> list[MemoryRow]:
        query = tenant_query(where)
        query.update(
            {"source": "fact", "metadata.slot": slot, "metadata.status": {"$ne": "deleted"}}
        )
        return await self._rows(query)

    async def set_slot_if_absent(self, vector_id: str, where: TenantFilter, slot: str) -> bool:
        # `"metadata.slot": None` matches a missing slot as well as a null one
        query = {**tenant_query(where), "_id": vector_id, "source": "fact", "metadata.slot": None}
        try:
            result = await self._col.update_one(query, {"$set": {"metadata.slot": slot}})
        except PyMongoError as exc:
            raise DependencyFailed(f"fact slot update failed: {exc}") from exc
        return result.modified_count == 1

    async def set_validity(
        self, vector_id: str, invalid_at: int | None, superseded_by: str | None
    ) -> None:
        status = "superseded" if invalid_at is not None else "active"
        try:
            await self._col.update_one(
                {"_id": vector_id},
                {
                    "$set": {
                        "invalidAt": invalid_at,
                        "supersededBy": superseded_by,
                        "metadata.status": status,
                    }
                },
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"fact validity update failed: {exc}") from exc

    async def stats(self, agent_wallet: str, user_address: str | None = None) -> VectorStats:
        """Active rows of the agent grouped by source in one aggregation (a missing
        `decayScore` counts as 1, the default of a new row)."""
        query = _agent_query(agent_wallet, user_address)
        query["metadata.status"] = {"$nin": list(INACTIVE_STATUSES)}
        group = {
            "_id": "$source",
            "n": {"$sum": 1},
            "decay": {"$sum": {"$ifNull": ["$decayScore", 1.0]}},
            "oldest": {"$min": "$createdAt"},
            "newest": {"$max": "$createdAt"},
        }
        try:
            cursor = await self._col.aggregate([{"$match": query}, {"$group": group}])
            groups = await cursor.to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory stats failed: {exc}") from exc
        total = sum(int(g["n"]) for g in groups)
        if not total:
            return VectorStats()
        return VectorStats(
            total=total,
            avg_decay_score=sum(float(g["decay"]) for g in groups) / total,
            oldest=min(int(g["oldest"]) for g in groups),
            newest=max(int(g["newest"]) for g in groups),
            by_source={str(g["_id"]): int(g["n"]) for g in groups},
        )

    async def _rows(self, query: Doc) -> list[MemoryRow]:
        try:
            docs = await self._col.find(query).to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory read failed: {exc}") from exc
        return [row_of(d) for d in docs]


class MongoRelationStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[RELATIONS]

    async def insert_if_absent(self, relation: RelationRecord) -> bool:
        doc: Doc = {
            "_id": relation.relation_id,
            "relationId": relation.relation_id,
            **_scope_doc(relation.scope),
            "sourceId": relation.source_id,
            "sourceName": relation.source_name,
            "type": relation.type,
            "targetId": relation.target_id,
            "targetName": relation.target_name,
            "createdAt": relation.created_at,
            "invalidAt": relation.invalid_at,
            "metadata": relation.metadata,
        }
        try:
            result = await self._col.update_one(
                {"_id": relation.relation_id}, {"$setOnInsert": doc}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"relation insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def around(self, where: TenantFilter, entity_ids: Sequence[str]) -> list[RelationRecord]:
        if not entity_ids:
            return []
        ids = list(entity_ids)
        return await self._find(
            {
                **tenant_query(where),
                "$or": [{"sourceId": {"$in": ids}}, {"targetId": {"$in": ids}}],
            }
        )

    async def _find(self, query: Doc) -> list[RelationRecord]:
        try:
            docs = await self._col.find(query).sort("createdAt", ASCENDING).to_list(length=500)
        except PyMongoError as exc:
            raise DependencyFailed(f"relation read failed: {exc}") from exc
        return [
            RelationRecord(
                relation_id=d["relationId"],
                scope=_scope_of(d),
                source_id=d["sourceId"],
                source_name=d["sourceName"],
                type=d["type"],
                target_id=d["targetId"],
                target_name=d["targetName"],
                created_at=int(d["createdAt"]),
                metadata=dict(d.get("metadata") or {}),
                invalid_at=d.get("invalidAt"),
            )
            for d in docs
        ]

    async def from_source(
        self, where: TenantFilter, source_id: str, type: str
    ) -> list[RelationRecord]:
        return await self._find({**tenant_query(where), "sourceId": source_id, "type": type})

    async def set_validity(self, relation_id: str, invalid_at: int | None) -> None:
        try:
            await self._col.update_one({"_id": relation_id}, {"$set": {"invalidAt": invalid_at}})
        except PyMongoError as exc:
            raise DependencyFailed(f"relation validity update failed: {exc}") from exc


def _optional_vector(doc: Mapping[str, Any]) -> Any:
    value = doc.get("embedding")
    return None if value is None else _unvector(value)


class MongoPatternStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[PATTERNS]

    async def upsert(self, pattern: PatternRecord) -> None:
        doc: Doc = {
            "patternId": pattern.pattern_id,
            **_scope_doc(pattern.scope),
            "patternType": pattern.pattern_type,
            "trigger": {"type": pattern.trigger_type, "value": pattern.trigger_value},
            "steps": [{"action": a, "order": i} for i, a in enumerate(pattern.steps)],
            "summary": pattern.summary,
            "successRate": pattern.success_rate,
            "executionCount": pattern.execution_count,
            "lastExecuted": pattern.last_executed,
            "updatedAt": pattern.last_executed,
            "status": pattern.status,
            "tags": pattern.tags,
            "embedding": _vector(pattern.embedding) if pattern.embedding is not None else None,
            "embeddingModel": pattern.embedding_model,
        }
        try:
            await self._col.update_one(
                {"_id": pattern.pattern_id},
                {"$set": doc, "$min": {"createdAt": pattern.created_at}},
                upsert=True,
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"pattern upsert failed: {exc}") from exc

    async def active(self, where: TenantFilter, limit: int) -> list[PatternRecord]:
        query = {**tenant_query(where), "status": {"$nin": list(INACTIVE_STATUSES)}}
        try:
            docs = await (
                self._col.find(query)
                .sort([("successRate", DESCENDING), ("lastExecuted", DESCENDING)])
                .limit(limit)
                .to_list(length=limit)
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"pattern read failed: {exc}") from exc
        return [
            PatternRecord(
                pattern_id=d["patternId"],
                scope=_scope_of(d),
                pattern_type=d["patternType"],
                trigger_type=d["trigger"]["type"],
                trigger_value=d["trigger"]["value"],
                steps=[s["action"] for s in sorted(d.get("steps", []), key=lambda s: s["order"])],
                summary=d["summary"],
                success_rate=float(d["successRate"]),
                execution_count=int(d["executionCount"]),
                last_executed=int(d["lastExecuted"]),
                created_at=int(d["createdAt"]),
                embedding=_optional_vector(d),
                embedding_model=d.get("embeddingModel"),
                tags=list(d.get("tags") or []),
                status=d.get("status", "active"),
            )
            for d in docs
        ]


class MongoArchiveStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[ARCHIVES]

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool:
        doc: Doc = {
            "_id": archive.archive_id,
            "archiveId": archive.archive_id,
            **_scope_doc(archive.scope),
            "summary": archive.summary,
            "topics": archive.topics,
            "dateRange": {"start": archive.start, "end": archive.end},
            "createdAt": archive.created_at,
            "status": archive.status,
            "embedding": _vector(archive.embedding) if archive.embedding is not None else None,
            "embeddingModel": archive.embedding_model,
            "metadata": {"entryCount": archive.entry_count, **archive.metadata},
            "content": archive.content,
            "compressed": archive.content is not None,
            "ipfsCid": archive.ipfs_cid,
        }
        try:
            result = await self._col.update_one(
                {"_id": archive.archive_id}, {"$setOnInsert": doc}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"archive insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def set_cid(self, archive_id: str, cid: str) -> None:
        """Record where the (encrypted) archive was pinned."""
        try:
            await self._col.update_one({"_id": archive_id}, {"$set": {"ipfsCid": cid}})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive update failed: {exc}") from exc

    async def content_of(self, archive_id: str) -> str | None:
        try:
            doc = await self._col.find_one({"_id": archive_id}, {"content": 1})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        return None if doc is None else doc.get("content")

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        query = {**tenant_query(where), "status": {"$nin": list(INACTIVE_STATUSES)}}
        try:
            docs = await (
                self._col.find(query, {"content": 0})
                .sort("createdAt", DESCENDING)
                .limit(limit)
                .to_list(length=limit)
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        return [
            ArchiveRecord(
                archive_id=d["archiveId"],
                scope=_scope_of(d),
                summary=d["summary"],
                topics=list(d.get("topics") or []),
                entry_count=int((d.get("metadata") or {}).get("entryCount", 0)),
                start=int(d["dateRange"]["start"]),
                end=int(d["dateRange"]["end"]),
                created_at=int(d["createdAt"]),
                embedding=_optional_vector(d),
                embedding_model=d.get("embeddingModel"),
                status=d.get("status", "active"),
                metadata={k: v for k, v in (d.get("metadata") or {}).items() if k != "entryCount"},
            )
            for d in docs
        ]
