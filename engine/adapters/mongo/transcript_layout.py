"""The one-off migration of transcripts from one document per thread to one per turn
(issue 29), run by `ensure_schema` before any consumer starts.

A head written by the old layout holds the thread's `messages` (sorted by timestamp, each
with its `turnId`), `turnIds`, `turnVectors`, `tokenCount`, `summary` and `metadata`. Each
is split into turn documents (`transcripts.turn_doc`'s shape): the messages grouped by turn
id in order (messages without one, written before turn ids existed, form one turn per run),
the thread's token count on its first turn (the old layout kept only the sum), its summary
and metadata on its last. Its `turnVectors` are dropped: a turn's vector is its turn row's,
where the scene layer reads it. The turns are inserted (a duplicate
means a crashed migration got there first), then the old fields are removed from the head.
Every step is idempotent, so a migration stopped half-way finishes on the next start; a
marker in `schema_layouts` then makes later starts skip the scan."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import insert_ignoring_duplicates
from engine.adapters.mongo.documents import Doc
from engine.errors import DependencyFailed

LAYOUT_ID = "transcripts"
LAYOUT = 2
"""1: one document per thread; 2: one per turn, a head per thread."""
OLD_FIELDS = ("messages", "turnIds", "turnVectors", "tokenCount", "summary", "metadata")
_SCOPE = ("agentWallet", "userAddress", "threadId", "mode", "haiId")


async def migrate_transcripts(
    heads: AsyncCollection[Doc],
    turns: AsyncCollection[Doc],
    layouts: AsyncCollection[Doc],
    *,
    fresh: bool,
) -> int:
    """Split every old-layout head into turn documents; how many heads were migrated.
    `fresh`: the heads' collection was just created (nothing to migrate)."""
    try:
        done = await layouts.find_one({"_id": LAYOUT_ID})
        if done is not None and int(done.get("layout", 0)) >= LAYOUT:
            return 0
        migrated = 0
        if not fresh:
            async for head in heads.find({"messages": {"$exists": True}}):
                await insert_ignoring_duplicates(turns, split(head), "transcript migration")
                await heads.update_one(
                    {"_id": head["_id"]}, {"$unset": dict.fromkeys(OLD_FIELDS, "")}
                )
                migrated += 1
        await layouts.update_one({"_id": LAYOUT_ID}, {"$set": {"layout": LAYOUT}}, upsert=True)
    except PyMongoError as exc:
        raise DependencyFailed(f"transcript migration failed: {exc}") from exc
    return migrated


def split(head: Doc) -> list[Doc]:
    """The turn documents of an old-layout head, in order."""
    thread = str(head["_id"])
    groups: dict[str, list[dict[str, Any]]] = {}
    legacy: str | None = None  # the run of messages without a turn id being grouped
    for m in head.get("messages") or []:
        turn_id = m.get("turnId")
        if turn_id is None:
            legacy = legacy or f"legacy-{len(groups)}"
            turn_id = legacy
        else:
            legacy = None
        groups.setdefault(str(turn_id), []).append(m)
    scope = {k: head.get(k) for k in _SCOPE}
    docs: list[Doc] = []
    for i, (turn_id, messages) in enumerate(groups.items()):
        doc: Doc = {
            "_id": f"{thread}|{turn_id}",
            "thread": thread,
            "turnId": turn_id,
            "sessionId": head["sessionId"],
            **scope,
            "at": min(int(m["timestamp"]) for m in messages),
            "seq": i,
            "messages": messages,
            "tokenCount": int(head.get("tokenCount", 0)) if i == 0 else 0,
            "metadata": dict(head.get("metadata") or {}) if i == len(groups) - 1 else {},
        }
        if i == len(groups) - 1 and head.get("summary") is not None:
            doc["summary"] = head["summary"]
        docs.append(doc)
    return docs
