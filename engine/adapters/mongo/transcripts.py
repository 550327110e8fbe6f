"""`TranscriptStore` on MongoDB: the `session_transcripts` collection, one document per
session within its tenant (`_id` is `ScopeFields.document_key`), appended once per turn
(`append_once`: a redelivered turn is reported as "already applied")."""

from __future__ import annotations

from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import (
    Doc,
    agent_query,
    append_once,
    message_doc,
    message_of,
    scope_doc,
    scope_of,
    tenant_query,
    turn_vector_doc,
    turn_vector_of,
)
from engine.adapters.mongo.schema import TRANSCRIPTS
from engine.errors import DependencyFailed
from engine.records import Transcript, TranscriptAppend
from engine.scoping import TenantFilter


class MongoTranscriptStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[TRANSCRIPTS]

    async def append(self, turn: TranscriptAppend) -> bool:
        update: Doc = {
            "$push": {
                "messages": {
                    "$each": [message_doc(m) for m in turn.messages],
                    "$sort": {"timestamp": 1},
                },
                "turnIds": turn.turn_id,
                **({"turnVectors": turn_vector_doc(turn.vector)} if turn.vector else {}),
            },
            "$setOnInsert": {"sessionId": turn.session_id, **scope_doc(turn.scope)},
            "$min": {"createdAt": turn.at},
            "$max": {"updatedAt": turn.at},
            "$inc": {"tokenCount": turn.token_count},
        }
        sets: Doc = {f"metadata.{k}": v for k, v in turn.metadata.items()}
        if turn.summary is not None:
            sets["summary"] = turn.summary
        if sets:
            update["$set"] = sets
        key = turn.scope.document_key(turn.session_id)
        return await append_once(self._col, key, turn.turn_id, update, "transcript append")

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
            return await self._col.count_documents(agent_query(agent_wallet, user_address))
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
                scope=scope_of(d),
                messages=[message_of(m) for m in d.get("messages", [])],
                summary=d.get("summary"),
                token_count=int(d.get("tokenCount", 0)),
                created_at=int(d["createdAt"]),
                updated_at=int(d["updatedAt"]),
                turn_vectors=[turn_vector_of(v) for v in d.get("turnVectors", [])],
                metadata=dict(d.get("metadata") or {}),
            )
            for d in docs
        ]
