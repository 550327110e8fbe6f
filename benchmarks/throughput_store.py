"""What the throughput benchmark polls in MongoDB: turns durable (transcript, working buffer,
`session` memory row) and turn rows embedded, for the run's agents only."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pymongo import AsyncMongoClient

from engine.adapters.mongo import MEMORY, SESSIONS, TRANSCRIPT_TURNS, TRANSCRIPTS
from engine.adapters.mongo.transcripts import THREADS_PER_READ

"""How the memory adapter stores a row whose vector is not computed yet (`MemoryRow.pending`)."""


def _embedded_filter() -> dict[str, Any]:
    """A `memory` row that has its vector: a pending row is stored with `embeddingDim: 0` and
    no `embedding` (engine/adapters/mongo/memory_rows.py)."""
    return {"embeddingDim": {"$gt": 0}}


@dataclass(frozen=True, slots=True)
class Durable:
    """Counts of one poll. `working` counts threads whose last published turn is in the
    working buffer (a thread's turns are applied in order, so the earlier ones are too)."""

    transcript_turns: int
    turn_rows: int
    working_threads: int
    embedded_rows: int


class Store:
    """Reads one database (counts only the given agents' documents)."""

    def __init__(self, uri: str, db: str) -> None:
        self._mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri)
        self._db = self._mongo[db]

    async def close(self) -> None:
        await self._mongo.close()

    async def durable(self, agents: list[str], last_turns: Collection[str]) -> Durable:
        where = {"agentWallet": {"$in": agents}}
        heads = await self._db[TRANSCRIPTS].find(where, {"_id": 1}).to_list(None)
        threads = [h["_id"] for h in heads]
        stored = 0
        for i in range(0, len(threads), THREADS_PER_READ):  # the turns' index is by thread
            chunk = {"thread": {"$in": threads[i : i + THREADS_PER_READ]}}
            stored += await self._db[TRANSCRIPT_TURNS].count_documents(chunk)
        working = await self._db[SESSIONS].find(where, {"turnIds": 1}).to_list(None)
        rows = {**where, "source": "session"}
        in_working = {t for doc in working for t in doc.get("turnIds", [])}
        return Durable(
            transcript_turns=stored,
            turn_rows=await self._db[MEMORY].count_documents(rows),
            working_threads=sum(1 for t in last_turns if t in in_working),
            embedded_rows=await self._db[MEMORY].count_documents({**rows, **_embedded_filter()}),
        )

    async def wait(
        self,
        agents: list[str],
        last_turns: Collection[str],
        turns: int,
        *,
        began: float,
        embedded: bool,
        timeout: float,
    ) -> tuple[float, Durable]:
        """Poll until every turn is durable (`embedded`: and every turn row has its
        vector). Returns (seconds since `began`, the last counts); TimeoutError after
        `timeout` seconds with the counts in its message."""
        deadline = time.monotonic() + timeout
        while True:
            found = await self.durable(agents, last_turns)
            done = (
                found.transcript_turns >= turns
                and found.turn_rows >= turns
                and found.working_threads >= len(last_turns)
                and (not embedded or found.embedded_rows >= turns)
            )
            if done:
                return time.monotonic() - began, found
            if time.monotonic() > deadline:
                raise TimeoutError(f"not all {turns} turns stored within {timeout:.0f} s: {found}")
            await asyncio.sleep(0.25)
