"""The store's ceiling for the transcripts group (issue 15): how many turns/s the MongoDB-wire
server takes through `TurnRecorder.record_many` alone, with no broker, no model and no other
group, and what each of its three writes costs.

    python -m benchmarks.store_ceiling --turns 12000 --json      # from the repo root

Starts its own stack (or uses the servers named by MNEMOSTREAM_KAFKA_BOOTSTRAP / _MONGO_URI /
_REDIS_URL), writes `--turns` turns of the throughput benchmark's text (`--threads`, 50) into a
fresh database in batches of `--batch` with pending vectors (the embedding stage's way), and
prints, per batch size: `turns_per_s` over the whole batch, and `transcripts_per_s`,
`working_per_s`, `rows_per_s` (turns divided by the time spent in that write); then
`fill_per_s`: the embedding stage's writes for those turns, in its chunks (one
content-addressed vector record and one row fill a turn, 384 dimensions and two message
vectors; the model is not run), turns divided by their time. Then
`rows_by_index`: plain inserts of turn-row-shaped documents into a collection with no
secondary index, with the `memory` collection's indexes, and with every index the collection
had before issue 15, which shows what each index costs the server.

The live `stored_per_s` of `benchmarks.throughput` cannot exceed `turns_per_s` here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import numpy as np
from pymongo import ASCENDING, DESCENDING, AsyncMongoClient, IndexModel
from pymongo.asynchronous.database import AsyncDatabase

from benchmarks.pipeline import endpoints
from benchmarks.throughput_text import exchange, scopes, turn_body
from engine.adapters.mongo import (
    MEMORY,
    MongoMemoryStore,
    MongoTranscriptStore,
    MongoVectorStore,
    MongoWorkingStore,
    ensure_schema,
)
from engine.adapters.mongo.schema import INDEXES
from engine.embedding_store import group_key
from engine.ingest.turns import TurnRecorder, TurnStored
from engine.ports import InputType
from engine.records import Vector
from schemas.inputs import turn_recorded

T = TypeVar("T")
Doc = dict[str, Any]

TENANT = [("agentWallet", ASCENDING), ("userAddress", ASCENDING)]
BEFORE_ISSUE_15 = [
    IndexModel([*TENANT, ("source", ASCENDING), ("metadata.status", ASCENDING)]),
    IndexModel([*TENANT, ("mode", ASCENDING), ("haiId", ASCENDING)]),
    IndexModel([("agentWallet", ASCENDING), ("createdAt", DESCENDING)]),
    IndexModel([("metadata.turnId", ASCENDING)]),
    IndexModel([*TENANT, ("metadata.slot", ASCENDING)]),
]


class NoModel:
    """The recorder's embedder when vectors are deferred: never called."""

    model = "none"
    dimension = 384

    async def embed(self, texts: Any, input_type: InputType) -> list[Vector]:
        raise AssertionError("a deferred recorder embeds nothing")


class Timed:
    """Seconds spent in each wrapped coroutine method, by label."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, label: str, method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        async def timed(*args: Any, **kwargs: Any) -> T:
            began = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                spent = time.perf_counter() - began
                self.seconds[label] = self.seconds.get(label, 0.0) + spent

        return timed


FILL_CHUNK = 256
"""Turns whose vectors the embedding stage writes at a time (`services.groups.embeddings`)."""


async def fill_turns(db: AsyncDatabase[Doc], stored: list[TurnStored], seed: int) -> float:
    """Seconds the embedding stage's writes for `stored` take: per chunk, the turns' vector
    records (a turn and its two messages, one record) and their rows' vectors and units."""
    rows, records = MongoMemoryStore(db), MongoVectorStore(db)
    rng = np.random.default_rng(seed)
    spent = 0.0
    for i in range(0, len(stored), FILL_CHUNK):
        chunk = stored[i : i + FILL_CHUNK]
        made = {t.vector_id: rng.standard_normal((3, 384)).astype(np.float32) for t in chunk}
        keys = {t.vector_id: group_key(NoModel.model, 384, [t.content, "u", "a"]) for t in chunk}
        began = time.perf_counter()
        await records.put_many({keys[v]: m.reshape(-1) for v, m in made.items()})
        await rows.fill_embeddings(
            NoModel.model, {v: m[0] for v, m in made.items()}, {v: m[1:] for v, m in made.items()}
        )
        spent += time.perf_counter() - began
    return spent


async def record_turns(
    db: AsyncDatabase[Doc],
    turns: int,
    batch: int,
    seed: int,
    threads: int = 50,
    *,
    fill: bool = False,
) -> dict[str, Any]:
    await ensure_schema(db)
    transcripts, working, memory = (
        MongoTranscriptStore(db),
        MongoWorkingStore(db),
        MongoMemoryStore(db),
    )
    timed = Timed()
    for label, store, method in (
        ("transcripts", transcripts, "append_many"),
        ("working", working, "append_many"),
        ("rows", memory, "insert_many_if_absent"),
    ):
        setattr(store, method, timed.wrap(label, getattr(store, method)))
    recorder = TurnRecorder(transcripts, working, memory, NoModel(), deferred=True)
    scoped = scopes("c", 1, threads)
    rng = random.Random(seed)
    start_ms = int(time.time() * 1000) - turns
    events = [
        turn_recorded(turn_body(scoped[n % len(scoped)], *exchange(rng, n), start_ms + n))
        for n in range(turns)
    ]
    began = time.perf_counter()
    stored: list[TurnStored] = []
    for i in range(0, turns, batch):
        stored += await recorder.record_many(events[i : i + batch])
    total = time.perf_counter() - began
    out = {
        "batch": batch,
        "threads": threads,
        "turns_per_s": round(turns / total, 1),
        **{f"{k}_per_s": round(turns / v, 1) for k, v in sorted(timed.seconds.items())},
    }
    if fill:
        out["fill_per_s"] = round(turns / await fill_turns(db, stored, seed), 1)
    return out


def row(n: int) -> Doc:
    return {
        "_id": f"row{n}",
        "agentWallet": "0xc",
        "userAddress": f"user{n % 10}",
        "threadId": f"thread{n % 50}",
        "content": "user: " + "a turn of about three hundred characters " * 7,
        "embeddingModel": "none",
        "embeddingDim": 0,
        "source": "session",
        "createdAt": 1_700_000_000_000 + n,
        "metadata": {"status": "active", "turnId": f"t{n}", "sessionId": f"s{n % 50}"},
    }


async def rows_by_index(db: AsyncDatabase[Doc], count: int) -> dict[str, float]:
    out: dict[str, float] = {}
    docs = [row(n) for n in range(count)]
    for label, models in (
        ("none", []),
        ("memory_indexes", list(INDEXES[MEMORY])),
        ("before_issue_15", BEFORE_ISSUE_15),
    ):
        col = db[f"rows_{label}"]
        await db.create_collection(col.name)
        if models:
            await col.create_indexes(models)
        began = time.perf_counter()
        for i in range(0, count, 1000):
            await col.insert_many([dict(d) for d in docs[i : i + 1000]], ordered=False)
        out[label] = round(count / (time.perf_counter() - began), 1)
    return out


async def measure(
    uri: str, turns: int, batches: list[int], seed: int, threads: int
) -> dict[str, Any]:
    client: AsyncMongoClient[Doc] = AsyncMongoClient(uri)
    names: list[str] = []
    try:
        results = []
        for batch in batches:
            name = f"ceiling_{uuid.uuid4().hex[:8]}"
            names.append(name)
            results.append(await record_turns(client[name], turns, batch, seed, threads, fill=True))
            print(f"[store_ceiling] batch {batch}: {results[-1]}", file=sys.stderr, flush=True)
        name = f"ceiling_{uuid.uuid4().hex[:8]}"
        names.append(name)
        return {
            "turns": turns,
            "threads": threads,
            "record_many": results,
            "rows_by_index": await rows_by_index(client[name], min(turns, 6000)),
        }
    finally:
        for name in names:
            await client.drop_database(name)
        await client.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--turns", type=int, default=12000)
    p.add_argument("--batch", type=int, action="append", help="batch sizes (default 2000, 500)")
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--threads", type=int, default=50, help="threads the turns are spread over")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = p.parse_args(argv)
    with endpoints() as ends:
        result = asyncio.run(
            measure(ends.mongo_uri, args.turns, args.batch or [2000, 500], args.seed, args.threads)
        )
    if args.json:
        print(json.dumps(result))
        return
    for r in result["record_many"]:
        print(f"record_many, batches of {r['batch']}: {r['turns_per_s']} turns/s ({r})")
    print(f"turn-row inserts by index set (rows/s): {result['rows_by_index']}")


if __name__ == "__main__":
    main()
