"""`WorkingStore` on MongoDB: the working buffer of each session in the `sessions`
collection (`_id` is `ScopeFields.document_key`), appended once per turn (`append_once`)."""

from __future__ import annotations

from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import (
    Doc,
    append_once,
    as_date,
    scope_doc,
    scope_of,
    tenant_query,
    turn_vector_doc,
    turn_vector_of,
)
from engine.adapters.mongo.schema import SESSIONS
from engine.errors import DependencyFailed
from engine.records import WorkingAppend, WorkingSession
from engine.scoping import TenantFilter

WORKING_TURN_VECTORS = 6
"""Turn vectors kept per working buffer (about the turns its 12 lines come from)."""
WORKING_TURN_IDS_KEPT = 1000
"""Turn ids remembered per working buffer for idempotency (older redeliveries re-append)."""


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
                            "$each": [turn_vector_doc(lines.vector)],
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
                **scope_doc(lines.scope),
            },
            "$min": {"createdAt": lines.at},
            "$max": {"lastAccessedAt": lines.at, "expiresAt": as_date(lines.expires_at)},
        }
        if lines.state:
            update["$set"] = {f"workingMemory.state.{k}": v for k, v in lines.state.items()}
        key = lines.scope.document_key(lines.session_id)
        return await append_once(self._col, key, lines.turn_id, update, "working append")

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
                    scope=scope_of(d),
                    lines=list(reversed(memory.get("context") or [])),
                    state=dict(memory.get("state") or {}),
                    last_accessed_at=int(d["lastAccessedAt"]),
                    created_at=int(d["createdAt"]),
                    turn_vectors=[turn_vector_of(v) for v in memory.get("vectors") or []],
                )
            )
        return out
