"""`TranscriptStore` on MongoDB: one bounded document per turn (issue 29).

A thread's transcript used to be one document appended to on every turn: the server copied,
sorted and re-encoded it whole on each append, a turn's cost grew with its thread, and at
16 MB MongoDB refused it (a long-running thread lost its turns to the dead-letter topic).
Now:

* `transcript_turns` holds one document per turn, `_id` = thread key + turn id: the turn's
  messages, token count, summary and metadata (its vector is its turn row's: the embedding
  stage writes a turn's vector once, on that row; a `vector` left by an older build is not
  read). Inserting it is
  the turn's one write, and its idempotence guard: a redelivered or replayed turn collides
  on `_id` and changes nothing. No document grows with the thread.
* `session_transcripts` keeps one small head per thread (`_id` = `ScopeFields.
  document_key`): the scope, `createdAt` (`$min`) and `updatedAt` (`$max`), upserted once
  per thread per batch. Both operators are idempotent, so a head is updated for duplicates
  too: a crash between the inserts and the heads is healed by the redelivery.
* A transcript is read back by its head and the turns' index (`thread`, `at`, `seq`), in
  order (`seq`: the writer's order, for turns of equal time):
  messages in timestamp order, tokens summed, the last summary and metadata merged in turn
  order (later turns win), as the appends produced them.

`ensure_schema` migrates heads written by the old layout (`engine.adapters.mongo.
transcript_layout`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from pymongo import DESCENDING, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import insert_ignoring_duplicates
from engine.adapters.mongo.documents import (
    Doc,
    agent_query,
    message_doc,
    scope_doc,
    scope_of,
    tenant_query,
)
from engine.adapters.mongo.schema import TRANSCRIPT_TURNS, TRANSCRIPTS
from engine.adapters.mongo.turn_windows import TURN_COUNT, TurnWindows, messages_of
from engine.errors import DependencyFailed
from engine.records import StoredMessage, Transcript, TranscriptAppend
from engine.scoping import TenantFilter

THREADS_PER_READ = 32
"""Threads whose turns one query reads (`thread: {$in: …}`): the MongoDB-wire server's cost per
key of an `$in` grows with the list's length."""

_UNREAD = {"vector": 0}
"""Not read back: a turn's vector as an older build stored it beside the turn."""


def turn_key(thread: str, turn_id: str) -> str:
    """The `_id` of a turn's document: its thread's key and the turn id."""
    return f"{thread}|{turn_id}"


def turn_doc(turn: TranscriptAppend, seq: int = 0) -> Doc:
    """`seq`: the turn's place in the order the writer stored turns, which orders turns of
    equal `at` (the arrival order, as one document's `$push` kept it)."""
    thread = turn.scope.document_key(turn.session_id)
    doc: Doc = {
        "_id": turn_key(thread, turn.turn_id),
        "thread": thread,
        "turnId": turn.turn_id,
        "sessionId": turn.session_id,
        **scope_doc(turn.scope),
        "at": turn.at,
        "seq": seq,
        "messages": [message_doc(m) for m in turn.messages],
        "tokenCount": turn.token_count,
        "metadata": dict(turn.metadata),
    }
    if turn.summary is not None:
        doc["summary"] = turn.summary
    return doc


def head_update(turns: Sequence[TranscriptAppend], inserted: int = 0) -> Doc:
    """The head's update for `turns` of one thread: idempotent operators, and the count of
    the turns this write inserted (`inserted`: none for a redelivered turn), which the
    search's turn windows check (`turn_windows`)."""
    first = turns[0]
    return {
        "$setOnInsert": {"sessionId": first.session_id, **scope_doc(first.scope)},
        "$min": {"createdAt": min(t.at for t in turns)},
        "$max": {"updatedAt": max(t.at for t in turns)},
        "$inc": {TURN_COUNT: inserted},
    }


class MongoTranscriptStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._heads: AsyncCollection[Doc] = db[TRANSCRIPTS]
        self._turns: AsyncCollection[Doc] = db[TRANSCRIPT_TURNS]
        self.windows = TurnWindows()
        """The newest turns of the threads this store's reader asked for (`recent(…, turns=n)`:
        the scene layer), followed by deltas."""

    async def append(self, turn: TranscriptAppend) -> bool:
        [applied] = await self.append_many([turn])
        return applied

    async def append_many(self, turns: Sequence[TranscriptAppend]) -> list[bool]:
        """One unordered insert of the turns' documents, then one upsert per thread's head.
        A turn repeated within `turns` is applied once (its first occurrence)."""
        if not turns:
            return []
        base = time.time_ns()  # increasing across batches of one writer; replay: log order
        docs = [turn_doc(t, base + i) for i, t in enumerate(turns)]
        first: dict[str, int] = {}
        for i, doc in enumerate(docs):
            first.setdefault(doc["_id"], i)
        inserted = await insert_ignoring_duplicates(
            self._turns, [docs[i] for i in first.values()], "transcript append"
        )
        threads: dict[str, list[TranscriptAppend]] = {}
        added: dict[str, int] = {}
        for i, (turn, doc) in enumerate(zip(turns, docs, strict=True)):
            threads.setdefault(doc["thread"], []).append(turn)
            if first[doc["_id"]] == i and doc["_id"] in inserted:
                added[doc["thread"]] = added.get(doc["thread"], 0) + 1
        ops = [
            UpdateOne({"_id": k}, head_update(g, added.get(k, 0)), upsert=True)
            for k, g in threads.items()
        ]
        try:
            await self._heads.bulk_write(ops, ordered=False)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript append failed (its heads): {exc}") from exc
        return [first[d["_id"]] == i and d["_id"] in inserted for i, d in enumerate(docs)]

    async def recent(
        self, where: TenantFilter, limit: int, turns: int | None = None
    ) -> list[Transcript]:
        """`turns`: each transcript's newest that many turns only (the whole thread when
        None)."""
        try:
            cursor = self._heads.find(tenant_query(where)).sort("updatedAt", DESCENDING)
            heads = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc
        return await self._transcripts(heads, turns)

    async def of_session(self, where: TenantFilter, session_id: str) -> Transcript | None:
        """The newest transcript of `session_id` the filter admits (`SessionTranscripts`)."""
        query = {**tenant_query(where), "sessionId": session_id}
        try:
            cursor = self._heads.find(query).sort("updatedAt", DESCENDING).limit(1)
            heads = await cursor.to_list(length=1)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc
        found = await self._transcripts(heads, None)
        return found[0] if found else None

    async def count(self, agent_wallet: str, user_address: str | None = None) -> int:
        """Transcripts of the agent (every user when `user_address` is None)."""
        try:
            return await self._heads.count_documents(agent_query(agent_wallet, user_address))
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript count failed: {exc}") from exc

    async def of_agent(self, agent: str, since: int) -> list[Transcript]:
        """Every transcript of the agent (all users) updated since `since` (ms), for jobs."""
        query = {"agentWallet": agent, "updatedAt": {"$gte": since}}
        try:
            heads = await self._heads.find(query).to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc
        return await self._transcripts(heads, None)

    async def _transcripts(self, heads: list[Doc], newest: int | None) -> list[Transcript]:
        keys = [str(h["_id"]) for h in heads]
        if newest is None:
            step = THREADS_PER_READ
            chunks = [keys[i : i + step] for i in range(0, len(keys), step)]
            parts = await asyncio.gather(
                *(self._read({"thread": {"$in": c}}, None) for c in chunks)
            )
        else:  # the newest turns of each thread: one query each (a delta), read together
            parts = await asyncio.gather(
                *(self.windows.newest(h, newest, self._read) for h in heads)
            )
        by_thread: dict[str, list[Doc]] = {k: [] for k in keys}
        for part in parts:
            for doc in part:
                by_thread[str(doc["thread"])].append(doc)
        # a window's held documents are read into messages once (`TurnWindows.messages`)
        read = messages_of if newest is None else self.windows.messages
        return [assemble(h, by_thread[str(h["_id"])], read) for h in heads]

    async def _read(self, query: Doc, newest: int | None) -> list[Doc]:
        if newest is not None and newest <= 0:
            return []  # (a cursor's limit 0 means no limit)
        try:
            if newest is None:
                return await self._turns.find(query, _UNREAD).to_list(length=None)
            order = [("at", DESCENDING), ("seq", DESCENDING), ("_id", DESCENDING)]
            cursor = self._turns.find(query, _UNREAD).sort(order)
            cursor = cursor.limit(newest)
            return await cursor.to_list(length=newest)
        except PyMongoError as exc:
            raise DependencyFailed(f"transcript read failed: {exc}") from exc


def assemble(
    head: Doc, turns: list[Doc], read: Callable[[Doc], list[StoredMessage]] = messages_of
) -> Transcript:
    """A transcript from its head and turn documents (any order): turns by (`at`, `seq`,
    `_id`), their messages (`read`) stably sorted by timestamp."""
    turns = sorted(turns, key=lambda d: (int(d["at"]), int(d.get("seq", 0)), str(d["_id"])))
    messages = sorted((m for d in turns for m in read(d)), key=lambda m: m.timestamp)
    summary = None
    metadata: dict[str, object] = {}
    for d in turns:
        summary = d.get("summary", summary)
        metadata.update(d.get("metadata") or {})
    return Transcript(
        session_id=head["sessionId"],
        scope=scope_of(head),
        messages=messages,
        summary=summary,
        token_count=sum(int(d.get("tokenCount", 0)) for d in turns),
        created_at=int(head["createdAt"]),
        updated_at=int(head["updatedAt"]),
        metadata=metadata,
    )
