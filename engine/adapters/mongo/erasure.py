"""`UserEraser` on MongoDB: one `delete_many` per collection on the exact tenant
(`agentWallet` and `userAddress` equal), so the agent's user-less rows and other users' rows
never match; the user's item history is silenced, not deleted (`SILENCED`). Collections are
erased one after the other; a driver error stops the erasure (`DependencyFailed`) and a retry
finishes it (what went is gone; deleting again is a no-op)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.changes import epoch_fence
from engine.adapters.mongo.documents import Doc
from engine.adapters.mongo.history import SILENCED
from engine.adapters.mongo.schema import (
    ARCHIVES,
    HISTORY,
    MEMORY,
    PATTERNS,
    RELATIONS,
    SESSIONS,
    SKILLS,
    TRANSCRIPT_TURNS,
    TRANSCRIPTS,
)
from engine.adapters.mongo.transcripts import THREADS_PER_READ
from engine.errors import DependencyFailed

COLLECTIONS = {
    "memory": MEMORY,
    "transcripts": TRANSCRIPTS,
    "working": SESSIONS,
    "relations": RELATIONS,
    "patterns": PATTERNS,
    "archives": ARCHIVES,
    "skills": SKILLS,
}
"""The collection of each erased kind (`engine.upkeep.erasure.ERASED_KINDS`)."""


class MongoUserEraser:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._db = db

    async def erase_user(self, agent_wallet: str, user_address: str) -> dict[str, int]:
        query = {"agentWallet": agent_wallet, "userAddress": user_address}
        counts: dict[str, int] = {}
        # fenced by the epoch: search state holding the user loads anew
        async with epoch_fence(self._db, [agent_wallet], "erasing the user's memory"):
            await self._erase_turns(query)
            for kind, name in COLLECTIONS.items():
                try:
                    result = await self._db[name].delete_many(query)
                except PyMongoError as exc:
                    raise DependencyFailed(f"erasing the user's {kind} failed: {exc}") from exc
                counts[kind] = result.deleted_count
        counts["history"] = await self._silence_history(query)
        return counts

    async def _silence_history(self, query: Doc) -> int:
        """The user's item history keeps what happened and loses what it said (issue 31),
        as a single item's hard delete does: the changes whose texts went."""
        try:
            result = await self._db[HISTORY].update_many(
                {**query, "details.forgotten": {"$ne": True}}, SILENCED
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"erasing the user's item history failed: {exc}") from exc
        return result.modified_count

    async def _erase_turns(self, query: Doc) -> None:
        """The turns of the user's transcripts, found by their heads (the turns' one index is
        by thread), before the heads themselves: a retry after a failure still finds them."""
        try:
            heads = await self._db[TRANSCRIPTS].find(query, {"_id": 1}).to_list(None)
            keys = [h["_id"] for h in heads]
            for i in range(0, len(keys), THREADS_PER_READ):
                chunk = keys[i : i + THREADS_PER_READ]
                await self._db[TRANSCRIPT_TURNS].delete_many({"thread": {"$in": chunk}})
        except PyMongoError as exc:
            raise DependencyFailed(f"erasing the user's transcripts failed: {exc}") from exc
