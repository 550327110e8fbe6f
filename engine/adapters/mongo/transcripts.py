"""`TranscriptStore` on MongoDB: the `session_transcripts` collection, one document per
session within its tenant (`_id` is `ScopeFields.document_key`), appended once per turn
(`append_once`: a redelivered turn is reported as "already applied")."""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import (
    first_per_document,
    push_turn_vectors,
    versioned_upserts,
)
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
from engine.records import TRANSCRIPT_TURN_VECTORS, Transcript, TranscriptAppend, TurnVectorFill
from engine.scoping import TenantFilter


class MongoTranscriptStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[TRANSCRIPTS]

    async def append(self, turn: TranscriptAppend) -> bool:
        key = turn.scope.document_key(turn.session_id)
        return await append_once(self._col, key, turn.turn_id, _update([turn]), "transcript append")

    async def append_many(self, turns: Sequence[TranscriptAppend]) -> list[bool]:
        groups = first_per_document(
            turns, lambda t: t.scope.document_key(t.session_id), lambda t: t.turn_id
        )
        updates = {
            key: ([turns[i].turn_id for i in ix], _update([turns[i] for i in ix]))
            for key, ix in groups.items()
        }
        failed = await versioned_upserts(self._col, updates, "transcript append")
        applied = [False] * len(turns)
        for key, ix in groups.items():
            for i in ix:
                # a document whose guard failed is replayed turn by turn, in order
                applied[i] = await self.append(turns[i]) if key in failed else True
        return applied

    async def add_turn_vectors(self, fills: Sequence[TurnVectorFill]) -> int:
        # one rewrite per transcript, however many of its turns a batch fills: a transcript
        # is the largest document there is, and each update rewrites it whole
        return await push_turn_vectors(
            self._col,
            "turnVectors",
            fills,
            "transcript vector fill",
            keep=TRANSCRIPT_TURN_VECTORS,
        )

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


def _update(turns: Sequence[TranscriptAppend]) -> Doc:
    """One update appending `turns` (of one document, in order) as consecutive `append`s
    would: messages kept sorted by timestamp, tokens summed, the times widened, metadata
    merged (later turns win) and the last summary that is not None."""
    first = turns[0]
    vectors = [turn_vector_doc(t.vector) for t in turns if t.vector]
    update: Doc = {
        "$push": {
            "messages": {
                "$each": [message_doc(m) for t in turns for m in t.messages],
                "$sort": {"timestamp": 1},
            },
            "turnIds": {"$each": [t.turn_id for t in turns]},
            **(
                {"turnVectors": {"$each": vectors, "$slice": -TRANSCRIPT_TURN_VECTORS}}
                if vectors
                else {}
            ),
        },
        "$setOnInsert": {"sessionId": first.session_id, **scope_doc(first.scope)},
        "$min": {"createdAt": min(t.at for t in turns)},
        "$max": {"updatedAt": max(t.at for t in turns)},
        "$inc": {"tokenCount": sum(t.token_count for t in turns)},
    }
    sets: Doc = {}
    for t in turns:
        sets.update({f"metadata.{k}": v for k, v in t.metadata.items()})
        if t.summary is not None:
            sets["summary"] = t.summary
    if sets:
        update["$set"] = sets
    return update
