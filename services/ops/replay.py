"""Rebuild memory from the log: the writer groups re-read the turn, remember, facts, knowledge
and workflow topics from the beginning into a target database.

* **Fresh groups, resumable.** The replay's consumer groups are named by a prefix recorded in
  the target database (`replay_state`), so running the same replay again resumes from the
  groups' committed offsets; `fresh=True` drops the target first and starts new groups.
* **Bounded.** The end of every source partition is read when the replay starts, from its
  records (`log_reach`: the local broker reports an end short of the last batch); it is done
  when each group has committed up to them. Events published later are left to the live
  groups.
* **Says what it cannot rebuild.** A partition whose head was dropped (`truncations`), or a
  database (the live one, and the target) holding rows written before the log's first record
  (`log_gaps`): the report lists them, and `replay --verify` answers not verifiable.
* **Same documents.** The writers are the live groups' own code (transcripts, patterns,
  facts, knowledge, workflows); facts come from the recorded `FactsExtracted` events, so the
  model is not re-run and the same log gives the same documents. Natural `_id`s make every
  write an idempotent upsert.
* **No old requests.** The workflows group also answers reliability requests; its replay
  group starts at that topic's end, so a rebuild never answers requests of the past.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition
from pymongo import AsyncMongoClient

from engine.ports import Embedder
from schemas import topics
from services.groups import facts, knowledge, patterns, transcripts, workflows
from services.groups.app import running_groups
from services.ops.log_gaps import database_gaps
from services.ops.log_reach import log_reach
from services.runtime import endpoints
from services.settings import Settings
from services.stream.offsets import committed, start_at_end
from services.stream.security import NO_OPTIONS, kafka_options, mongo_options

STATE = "replay_state"
"""Collection in the target database holding the replay's group prefix."""

SOURCES: tuple[tuple[str, str], ...] = (
    (transcripts.GROUP, topics.TURNS),
    (patterns.GROUP, topics.TURNS),
    (f"{facts.GROUP}.remember", topics.REMEMBER),
    (facts.GROUP, topics.FACTS),
    (knowledge.GROUP, topics.KNOWLEDGE),
    (workflows.GROUP, topics.WORKFLOWS),
)
"""(consumer group suffix, topic) of every writer the replay runs."""

SOURCE_TOPICS = tuple(dict.fromkeys(topic for _, topic in SOURCES))

WRITER_GROUPS = (transcripts.GROUP, patterns.GROUP, facts.GROUP, knowledge.GROUP, workflows.GROUP)

REQUESTS_SKIPPED = ((f"{workflows.GROUP}.reliability", topics.RELIABILITY),)
"""(group suffix, topic) of the request-reply parts of the writer groups: started at the end."""


@dataclass(frozen=True, slots=True)
class Position:
    """One source partition of one replay group: where it started, is, and must reach."""

    group: str
    topic: str
    partition: int
    start: int
    current: int
    end: int

    @property
    def done(self) -> int:
        return max(0, min(self.current, self.end) - self.start)

    @property
    def total(self) -> int:
        return max(0, self.end - self.start)


@dataclass(slots=True)
class Progress:
    """Every position, refreshed while the replay runs."""

    positions: list[Position] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        return sum(p.done for p in self.positions)

    @property
    def total(self) -> int:
        return sum(p.total for p in self.positions)

    @property
    def finished(self) -> bool:
        return all(p.current >= p.end for p in self.positions)

    def records(self) -> int:
        """Log records replayed: each topic counted once (two groups read the turns)."""
        by_topic: dict[str, int] = {}
        for group, topic in SOURCES:
            count = sum(p.done for p in self.positions if p.group.endswith(f".{group}"))
            by_topic[topic] = min(by_topic.get(topic, count), count)
        return sum(by_topic.values())


def truncations(firsts: Mapping[tuple[str, int], int]) -> list[str]:
    """What the log no longer holds, a line per source partition whose first record is past
    offset 0 (its head was dropped: retention, or records deleted), sorted."""
    return [
        f"{topic} partition {partition} starts at offset {first}: its first {first} "
        "records are gone from the log and cannot be rebuilt"
        for (topic, partition), first in sorted(firsts.items())
        if first > 0
    ]


@dataclass(frozen=True, slots=True)
class ReplayReport:
    target_db: str
    group_prefix: str
    records: int
    seconds: float
    truncated: tuple[str, ...] = ()
    """The source partitions whose head the log dropped (`truncations`): a replay rebuilds
    what is left, never all of memory, and `verify` must not call it equal."""
    older: tuple[str, ...] = ()
    """The kinds of rows a database holds from before the log's first record
    (`log_gaps.older_than_log`): as above."""

    @property
    def gaps(self) -> tuple[str, ...]:
        """Every reason the log cannot rebuild all of memory (none: it can)."""
        return self.truncated + self.older

    @property
    def rate(self) -> float:
        """Log records per second."""
        return self.records / self.seconds if self.seconds > 0 else 0.0


async def group_prefix(settings: Settings, target_db: str, *, fresh: bool) -> str:
    """The replay's group prefix, recorded in the target database (dropped first if `fresh`)."""
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        endpoints(settings).mongo_uri, retryWrites=False, **mongo_options(settings)
    )
    try:
        if fresh:
            await mongo.drop_database(target_db)
        state = mongo[target_db][STATE]
        found = await state.find_one({"_id": "replay"})
        if found is not None:
            return str(found["groupPrefix"])
        prefix = f"{settings.group_prefix}-replay-{target_db}-{uuid.uuid4().hex[:8]}"
        await state.insert_one({"_id": "replay", "groupPrefix": prefix})
        return prefix
    finally:
        await mongo.close()


async def positions(
    bootstrap: str,
    prefix: str,
    ends: dict[tuple[str, int], int],
    starts: dict[tuple[str, str, int], int] | None = None,
    *,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> list[Position]:
    """Where each replay group stands on each source partition (committed offsets)."""
    found: list[Position] = []
    for group, topic in SOURCES:
        group_id = f"{prefix}.{group}"
        parts = [TopicPartition(t, n) for t, n in sorted(ends) if t == topic]
        done = await committed(bootstrap, group_id, parts, kafka_options=kafka_options)
        for tp in parts:
            current = max(done.get((topic, tp.partition), -1), 0)
            start = current if starts is None else starts[(group_id, topic, tp.partition)]
            end = ends[(topic, tp.partition)]
            found.append(Position(group_id, topic, tp.partition, start, current, end))
    return found


async def replay(
    settings: Settings,
    target_db: str,
    *,
    fresh: bool = False,
    agents: Sequence[str] = (),
    embedder: Embedder | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    poll_seconds: float = 0.5,
) -> ReplayReport:
    """Replay the log into `target_db` until every source partition is caught up with where
    it ended when the replay started. `agents` limits the rebuild to those tenants."""
    bootstrap = endpoints(settings).kafka_bootstrap
    security = kafka_options(settings)
    reach = await log_reach(bootstrap, SOURCE_TOPICS, kafka_options=security)
    ends = {key: part.end for key, part in reach.items()}
    truncated = truncations({key: part.first for key, part in reach.items()})
    # the live database before a fresh replay into it drops it
    older = await database_gaps(settings, settings.mongo.db, reach, agents)
    prefix = await group_prefix(settings, target_db, fresh=fresh)
    first = await positions(bootstrap, prefix, ends, kafka_options=security)
    starts = {(p.group, p.topic, p.partition): p.current for p in first}
    progress = Progress(first)
    target = settings.with_values(
        mongo_db=target_db,
        group_prefix=prefix,
        only_agents=list(agents),
        # the live deployment's Redis keys: embeddings are cached by model and text, so
        # a rebuild with the same model reuses them (another model misses, as it must)
        cache_prefix=settings.redis.cache_prefix or settings.mongo.db,
        # vectors are addressed by model and text: the live database's stored ones serve the
        # rebuild, which embeds inline (no embeddings group runs) and only what is missing
        embedding_store_db=settings.embedding.store_db or settings.mongo.db,
        embedding_deferred=False,
        # sealed events open with the live deployment's tenant keys (issue 31): an erased
        # user's events stay unreadable, everyone else's rebuild
        event_keys_db=settings.sealing.keys_db or settings.mongo.db,
    )
    began = time.monotonic()
    if not progress.finished:
        await start_at_end(
            bootstrap,
            [(f"{prefix}.{suffix}", topic) for suffix, topic in REQUESTS_SKIPPED],
            kafka_options=security,
        )
        async with running_groups(target, WRITER_GROUPS, embedder=embedder, broker_logs=False):
            while True:
                progress.positions = await positions(
                    bootstrap, prefix, ends, starts, kafka_options=security
                )
                if on_progress is not None:
                    on_progress(progress)
                if progress.finished:
                    break
                await asyncio.sleep(poll_seconds)
    elif on_progress is not None:
        on_progress(progress)
    seconds = time.monotonic() - began
    if target_db != settings.mongo.db:  # what the target held before, if it was not dropped
        older += await database_gaps(settings, target_db, reach, agents)
    return ReplayReport(
        target_db, prefix, progress.records(), seconds, tuple(truncated), tuple(older)
    )
