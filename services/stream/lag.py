"""A one-off reading of every consumer group's lag (the gateway's console): the same figure as
the `mnemostream_consumer_lag` gauge (`services.stream.metrics.LagMonitor`), end offset −
committed offset per partition, never below 0, read now for every group of
`services.stream.readers` under one group id prefix.

A group that has committed nothing on a partition counts from the partition's beginning
(every subscriber resets to `earliest`), and is reported as such (`committed` False): a
group that never ran shows the whole log as its lag."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from services.stream.metrics import partition_lag
from services.stream.offsets import ADMIN_TIMEOUT, committed
from services.stream.readers import topics_by_group
from services.stream.security import NO_OPTIONS


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    end: int
    """The offset the next message produced to the partition gets."""
    committed: int | None
    """The next offset the group reads, None when it has committed nothing there."""
    lag: int


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    """The Kafka group id, `<prefix>.<name>`."""
    partitions: tuple[PartitionLag, ...]

    @property
    def total(self) -> int:
        """Messages behind over every partition."""
        return sum(p.lag for p in self.partitions)

    @property
    def committed(self) -> bool:
        """Whether the group has committed on any of its partitions (it has run)."""
        return any(p.committed is not None for p in self.partitions)


async def consumer_lag(
    bootstrap: str, group_prefix: str, *, kafka_options: Mapping[str, Any] = NO_OPTIONS
) -> list[GroupLag]:
    """Every consumer group's lag now, sorted by group id; the partitions of a topic are the
    broker's (a topic that does not exist yet has none). Raises the broker's error
    (`KafkaError`, `OSError`, `TimeoutError` after `ADMIN_TIMEOUT`) when it cannot be read."""
    by_group = topics_by_group()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **kafka_options
    )
    try:
        async with asyncio.timeout(ADMIN_TIMEOUT):
            await consumer.start()
            await consumer.topics()  # refreshes the cluster metadata
            wanted = sorted({t for names in by_group.values() for t in names})
            partitions = [
                TopicPartition(topic, n)
                for topic in wanted
                for n in sorted(consumer.partitions_for_topic(topic) or ())
            ]
            ends = await consumer.end_offsets(partitions) if partitions else {}
            starts = await consumer.beginning_offsets(partitions) if partitions else {}
    finally:
        await consumer.stop()

    async def one(name: str, names: tuple[str, ...]) -> GroupLag:
        group = f"{group_prefix}.{name}"
        mine = [tp for tp in partitions if tp.topic in names]
        done = await committed(bootstrap, group, mine, kafka_options=kafka_options) if mine else {}
        rows = []
        for tp in mine:
            at = done.get((tp.topic, tp.partition), -1)
            lag = partition_lag(ends[tp], at, starts.get(tp, 0))
            rows.append(
                PartitionLag(tp.topic, tp.partition, ends[tp], at if at >= 0 else None, lag)
            )
        return GroupLag(group, tuple(rows))

    return list(await asyncio.gather(*(one(n, t) for n, t in by_group.items())))
