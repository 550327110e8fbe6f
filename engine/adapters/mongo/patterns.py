"""`PatternStore` on MongoDB: the `patterns` collection as the patterns layer reads it (the
counter that writes it per turn is `engine.adapters.mongo.pattern_counts`)."""

from __future__ import annotations

from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import (
    Doc,
    optional_vector,
    scope_doc,
    scope_of,
    tenant_query,
    vector,
)
from engine.adapters.mongo.schema import PATTERNS
from engine.errors import DependencyFailed
from engine.records import INACTIVE_STATUSES, PatternRecord
from engine.scoping import TenantFilter


class MongoPatternStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[PATTERNS]

    async def upsert(self, pattern: PatternRecord) -> None:
        doc: Doc = {
            "patternId": pattern.pattern_id,
            **scope_doc(pattern.scope),
            "patternType": pattern.pattern_type,
            "trigger": {"type": pattern.trigger_type, "value": pattern.trigger_value},
            "steps": [{"action": a, "order": i} for i, a in enumerate(pattern.steps)],
            "summary": pattern.summary,
            "successRate": pattern.success_rate,
            "executionCount": pattern.execution_count,
            "unknownCount": pattern.unknown_count,
            "lastExecuted": pattern.last_executed,
            "updatedAt": pattern.last_executed,
            "status": pattern.status,
            "tags": pattern.tags,
            "embedding": vector(pattern.embedding) if pattern.embedding is not None else None,
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
                scope=scope_of(d),
                pattern_type=d["patternType"],
                trigger_type=d["trigger"]["type"],
                trigger_value=d["trigger"]["value"],
                steps=[s["action"] for s in sorted(d.get("steps", []), key=lambda s: s["order"])],
                summary=d["summary"],
                success_rate=float(d["successRate"]),
                execution_count=int(d["executionCount"]),
                unknown_count=int(d.get("unknownCount", 0)),
                last_executed=int(d["lastExecuted"]),
                created_at=int(d["createdAt"]),
                embedding=optional_vector(d),
                embedding_model=d.get("embeddingModel"),
                tags=list(d.get("tags") or []),
                status=d.get("status", "active"),
            )
            for d in docs
        ]
