"""Where each partition of the source topics starts and ends, read from its records, and when
its first record was published: what a replay can rebuild (issue 31).

* **The true end.** The local broker answers a ListOffsets "latest" with the base offset of
  the partition's last record batch plus one (docs/operations.md#local-servers): a batch of
  twelve records published together at offsets 21..32 is reported as an end of 22. A replay
  bounded by that end stops before the last records and counts them short. The end here is
  read from the records (`services.stream.offsets.true_ends`, which every reader of end
  offsets uses).
* **The first record's time.** The timestamp of the record at a partition's first offset
  (the producer's clock when it published it, or the broker's on a topic with
  `LogAppendTime`): no document a writer stored from a record still in the log can be older
  than it (`services.ops.log_gaps`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from services.stream.offsets import partitions_of, true_ends
from services.stream.security import NO_OPTIONS

READ_TIMEOUT = 60.0
"""Bound on the whole read: a sick broker fails the replay instead of hanging it."""

SETTLE_MS = 300
"""A partition is done when a fetch of this long brings nothing past what was read."""


@dataclass(frozen=True, slots=True)
class Reach:
    """One partition: its first offset held, the next offset to be written (read from the
    records), and the first record's timestamp (ms; None when the partition holds none)."""

    first: int
    end: int
    first_at: int | None = None


async def log_reach(
    bootstrap: str,
    topic_names: Iterable[str],
    *,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> dict[tuple[str, int], Reach]:
    """`{(topic, partition): Reach}` of every partition of the topics, now."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="none",  # a position past the log is an error, never a silent jump
        fetch_max_wait_ms=50,
        **kafka_options,
    )
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            await consumer.start()
            parts = await partitions_of(consumer, topic_names)
            if not parts:
                return {}
            consumer.assign(parts)
            firsts = await consumer.beginning_offsets(parts)
            reported = await consumer.end_offsets(parts)
            held = {tp: firsts[tp] for tp in parts if reported[tp] > firsts[tp]}
            stamps = await _first_stamps(consumer, held)
            ends = await true_ends(consumer, firsts, reported)
    finally:
        await consumer.stop()
    return {(tp.topic, tp.partition): Reach(firsts[tp], ends[tp], stamps.get(tp)) for tp in parts}


async def _first_stamps(
    consumer: AIOKafkaConsumer, firsts: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """The timestamp of the first record of each partition (read from its first offset)."""
    stamps: dict[TopicPartition, int] = {}
    for tp, first in firsts.items():
        consumer.seek(tp, first)
    waiting = set(firsts)
    while waiting:
        fetched = await consumer.getmany(*waiting, timeout_ms=SETTLE_MS)
        for tp, records in fetched.items():
            if records and tp in waiting:
                stamps[tp] = records[0].timestamp
                waiting.discard(tp)
    return stamps
