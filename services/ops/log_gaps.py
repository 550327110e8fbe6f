"""Does the database hold what the log no longer does? (issue 31)

A log whose head was dropped (retention, deleted records) or that started again (a source
topic deleted and created again: its offsets start at 0, so `replay.truncations` sees nothing)
cannot rebuild the memory stored from the records it lost. What gives it away is time: a
writer stores a row after the record it came from was published, so a row **written** before
the first record still in the log came from a record the log no longer holds (or from no
record at all: rows written to MongoDB directly, a restored backup).

* **The log's start**, per source topic: the earliest timestamp of the first record of its
  partitions (`log_reach.Reach.first_at`: the publisher's clock).
* **The database's oldest write**, per kind of row: the oldest `changedAt` (the writer's
  clock, `engine.adapters.mongo.changes`) of the `memory` rows of that `source`, per tenant,
  sorted by `changedAt` with a limit of one, which the tenant's indexes serve: no scan
  (`oldest_stamp`). Neither an index hint nor a condition on `changedAt`: the local
  MongoDB-wire server answers either by walking the `tenant_changes` index and decoding the
  rows it holds (1.2–2.2 s a probe at 25,000 rows, against 0.02–0.14 s without), so a
  replay's check of a 20,000-turn database took minutes before the replay began (stop 43).
  Event times (a turn's `at`, a row's `createdAt`) are not compared: a client may record a
  turn of last week today (an import does), and a healthy log then holds an event older
  than its first record.
* **Which topics feed which rows** (`FEEDS`): turn rows come from turns and workflow
  checkpoints, facts and entities from remembers and extracted facts, knowledge rows from
  the knowledge topic. A row of a kind is compared with the earliest start of the topics that
  feed it, less `SKEW_MS` for the clocks of the publishers and writers.

Not seen: a row rewritten after its record was lost (its `changedAt` moved on; a restore by
`mnemostream import` stamps its own clock), transcript turns (no writer's clock; their
turn rows stand for them), and rows the jobs or requests write (archives, edits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING, AsyncMongoClient

from engine.adapters.mongo import MEMORY
from engine.adapters.mongo.changes import CHANGED_AT
from schemas import topics
from services.ops.log_reach import Reach
from services.runtime import endpoints
from services.settings import Settings
from services.stream.security import mongo_options

FEEDS: Mapping[str, tuple[str, ...]] = {
    "session": (topics.TURNS, topics.WORKFLOWS),
    "fact": (topics.REMEMBER, topics.FACTS),
    "entity": (topics.REMEMBER, topics.FACTS),
    "knowledge": (topics.KNOWLEDGE,),
}
"""A `memory` row's `source` → the source topics whose records its writers store it from."""

SKEW_MS = 60_000
"""How far a writer's clock may be behind a publisher's before a row counts as older than
the log: a row written less than this before the first record is not reported."""


def log_starts(reach: Mapping[tuple[str, int], Reach]) -> dict[str, int]:
    """`{topic: first record's timestamp (ms)}`, the earliest over its partitions; a topic
    whose partitions hold no record is absent."""
    starts: dict[str, int] = {}
    for (topic, _), part in reach.items():
        if part.first_at is not None:
            starts[topic] = min(starts.get(topic, part.first_at), part.first_at)
    return starts


def when(ms: int) -> str:
    """A time in ms as an ISO 8601 UTC string, to the second."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def older_than_log(
    oldest: Mapping[str, int], starts: Mapping[str, int], *, database: str = "the database"
) -> list[str]:
    """A line per kind of row (`FEEDS`) whose oldest write (`oldest`: `{source: ms}`) is
    older than the start of every topic that feeds it (`starts`, less `SKEW_MS`), or fed by
    topics that hold no record at all."""
    lines: list[str] = []
    for source, written in sorted(oldest.items()):
        feeding = FEEDS.get(source)
        if feeding is None:
            continue
        held = [starts[topic] for topic in feeding if topic in starts]
        names = " and ".join(feeding)
        if not held:
            lines.append(
                f"{names} cannot be rebuilt: {database} holds events from {when(written)} "
                f"({source} rows), the log holds no record of them"
            )
        elif written < min(held) - SKEW_MS:
            lines.append(
                f"{names} cannot be rebuilt: {database} holds events from {when(written)} "
                f"({source} rows), the log starts at {when(min(held))}"
            )
    return lines


async def oldest_writes(db: Any, agents: Sequence[str] = ()) -> dict[str, int]:
    """`{source: oldest changedAt}` of the `memory` rows of `db` of each kind in `FEEDS`, of
    `agents` (every agent if none): one index-backed read per tenant and kind."""
    memory = db[MEMORY]
    oldest: dict[str, int] = {}
    for agent in list(agents) or sorted(await memory.distinct("agentWallet")):
        for user in await memory.distinct("userAddress", {"agentWallet": agent}):
            for source in FEEDS:
                at = await oldest_stamp(memory, {"agentWallet": agent, "userAddress": user}, source)
                if at is not None:
                    oldest[source] = min(oldest.get(source, at), at)
    return oldest


async def oldest_stamp(memory: Any, tenant: Mapping[str, Any], source: str) -> int | None:
    """The oldest `changedAt` of the tenant's rows of `source`, None without one. Rows
    written before writers stamped them (no `changedAt`) sort first: only then is the
    stamp itself filtered, which the local server answers by walking an index."""
    for stamped in ({}, {CHANGED_AT: {"$gte": 0}}):
        query = {**tenant, "source": source, **stamped}
        cursor = memory.find(query, {CHANGED_AT: 1}).sort(CHANGED_AT, ASCENDING)
        found = await cursor.limit(1).to_list(1)
        if not found:
            return None
        if isinstance(at := found[0].get(CHANGED_AT), int):
            return at
    return None


async def database_gaps(
    settings: Settings,
    database: str,
    reach: Mapping[tuple[str, int], Reach],
    agents: Sequence[str] = (),
) -> list[str]:
    """`older_than_log` of `database` (of `agents`, if given) against the log's `reach`."""
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        endpoints(settings).mongo_uri, retryWrites=False, **mongo_options(settings)
    )
    try:
        oldest = await oldest_writes(mongo[database], agents)
    finally:
        await mongo.close()
    return older_than_log(oldest, log_starts(reach), database=f"database {database}")
