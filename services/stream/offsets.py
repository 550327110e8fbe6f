"""Committed offsets of consumer groups: the reliable "has this been processed?" signal.

The local broker's end offsets are unreliable (docs/operations.md#local-servers), so progress and
lag are read
from what a group has committed. A group commits an offset after its handler returned
(at-least-once), so `committed > offset` means the message at `offset` was processed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from services.stream.security import NO_OPTIONS

# Every broker round trip here is bounded: aiokafka retries an unknown group coordinator
# forever, and a helper that waits forever turns a sick broker into a hung caller.
ADMIN_TIMEOUT = 30.0
FETCH_MS = 200
"""A fetch of `true_ends` (a partition's last batch is there to read: it returns at once)."""
FETCH_ROUNDS = 5


async def committed(
    bootstrap: str,
    group_id: str,
    partitions: list[TopicPartition],
    *,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> dict[tuple[str, int], int]:
    """`{(topic, partition): next offset to read}` as committed by the group.
    `kafka_options`: security arguments (`services.stream.security.kafka_options`), as everywhere.

    Partitions are always named: the local broker cannot answer the "all partitions" form of
    the offset-fetch request that aiokafka's admin client sends otherwise."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **kafka_options)
    try:
        async with asyncio.timeout(ADMIN_TIMEOUT):
            await admin.start()
            offsets = await admin.list_consumer_group_offsets(group_id, partitions=partitions)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


async def wait_processed(
    bootstrap: str,
    group_id: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    timeout: float = 30,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> None:
    """Wait until the group has committed past `offset` on the partition; TimeoutError if not."""
    await wait_caught_up(
        bootstrap,
        group_id,
        {(topic, partition): offset + 1},
        timeout=timeout,
        kafka_options=kafka_options,
    )


async def wait_caught_up(
    bootstrap: str,
    group_id: str,
    ends: dict[tuple[str, int], int],
    *,
    timeout: float = 60,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> None:
    """Wait until the group has committed up to `ends` ({(topic, partition): next offset})
    on every listed partition; TimeoutError naming the ones behind if not."""
    partitions = [TopicPartition(topic, n) for topic, n in ends]
    behind = {key: end for key, end in ends.items() if end > 0}
    try:
        async with asyncio.timeout(timeout):
            while behind:
                done = await committed(bootstrap, group_id, partitions, kafka_options=kafka_options)
                behind = {key: end for key, end in behind.items() if done.get(key, -1) < end}
                if behind:
                    await asyncio.sleep(0.1)
    except TimeoutError:
        raise TimeoutError(f"{group_id} is behind on {sorted(behind)}") from None


async def end_offsets(
    bootstrap: str, topic_names: Iterable[str], *, kafka_options: Mapping[str, Any] = NO_OPTIONS
) -> dict[tuple[str, int], int]:
    """`{(topic, partition): next offset}` of every partition of the topics, now, read from
    the records (`true_ends`). Partitions come from the broker's metadata (a topic created
    elsewhere may have another count; a topic that does not exist has none)."""
    return await _log_bounds(bootstrap, topic_names, "end", kafka_options)


async def beginning_offsets(
    bootstrap: str, topic_names: Iterable[str], *, kafka_options: Mapping[str, Any] = NO_OPTIONS
) -> dict[tuple[str, int], int]:
    """`{(topic, partition): first offset still held}` of every partition of the topics: 0
    until the broker dropped records at its head (retention, or records deleted)."""
    return await _log_bounds(bootstrap, topic_names, "beginning", kafka_options)


async def _log_bounds(
    bootstrap: str,
    topic_names: Iterable[str],
    bound: Literal["beginning", "end"],
    kafka_options: Mapping[str, Any],
) -> dict[tuple[str, int], int]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **kafka_options
    )
    try:
        async with asyncio.timeout(ADMIN_TIMEOUT):
            await consumer.start()
            partitions = await partitions_of(consumer, topic_names)
            if not partitions:
                return {}
            if bound == "beginning":
                found = await consumer.beginning_offsets(partitions)
            else:
                firsts = await consumer.beginning_offsets(partitions)
                found = await true_ends(consumer, firsts, await consumer.end_offsets(partitions))
    finally:
        await consumer.stop()
    return {(tp.topic, tp.partition): offset for tp, offset in found.items()}


async def partitions_of(
    consumer: AIOKafkaConsumer, topic_names: Iterable[str]
) -> list[TopicPartition]:
    """Every partition of the topics, by the broker's metadata (read afresh; a topic that
    does not exist has none)."""
    await consumer.topics()  # refreshes the cluster metadata
    return [
        TopicPartition(topic, n)
        for topic in dict.fromkeys(topic_names)
        for n in sorted(consumer.partitions_for_topic(topic) or ())
    ]


async def true_ends(
    consumer: AIOKafkaConsumer,
    firsts: Mapping[TopicPartition, int],
    reported: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """The next offset of each partition, read from its records. The local broker answers a
    ListOffsets "latest" with the first offset of the partition's last record batch plus one
    (docs/operations.md#local-servers): twelve records published together at 21..32 read as
    an end of 22, so a reader bounded by it stops short, and a group started there reads the
    batch's tail again. Each partition that holds records is fetched from its reported end
    less one (a fetch returns the whole batch that offset is in, and the batches after it)
    until a fetch brings records; on Apache Kafka the reported end comes back unchanged.
    `consumer` is started and not subscribed; its assignment is replaced."""
    held = {
        tp: max(reported[tp] - 1, first) for tp, first in firsts.items() if reported[tp] > first
    }
    ends = {tp: reported[tp] for tp in reported}
    if not held:
        return ends
    consumer.assign(list(held))
    for tp, offset in held.items():
        consumer.seek(tp, offset)
    waiting = set(held)
    async with asyncio.timeout(ADMIN_TIMEOUT):
        for _ in range(FETCH_ROUNDS):  # a partition that brings nothing keeps its reported end
            fetched = await consumer.getmany(*waiting, timeout_ms=FETCH_MS)
            for tp, records in fetched.items():
                if records:
                    ends[tp] = max(ends[tp], records[-1].offset + 1)
                    waiting.discard(tp)
            if not waiting:
                break
    return ends


async def start_at_end(
    bootstrap: str,
    subscriptions: Iterable[tuple[str, str]],
    *,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> None:
    """For each (group id, topic) of a group that has no members yet, commit the topic's
    current end offsets, so the group reads only what is published from now on. (A new
    group's "latest" reset is wrong on the local broker, docs/operations.md#local-servers: every
    subscriber
    resets to earliest, and this is how a new group skips a log it must not process.)"""
    wanted = list(subscriptions)
    ends = await end_offsets(bootstrap, (t for _, t in wanted), kafka_options=kafka_options)
    for group_id, topic in wanted:
        mine = {TopicPartition(t, n): offset for (t, n), offset in ends.items() if t == topic}
        if not mine:
            continue  # the topic does not exist yet: there is nothing to skip
        member = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group_id,
            enable_auto_commit=False,
            **kafka_options,
        )
        try:
            async with asyncio.timeout(ADMIN_TIMEOUT):
                await member.start()
                member.assign(list(mine))
                await member.commit(mine)
        finally:
            async with asyncio.timeout(ADMIN_TIMEOUT):
                await member.stop()


__all__ = [
    "TopicPartition",
    "committed",
    "partitions_of",
    "start_at_end",
    "true_ends",
    "wait_caught_up",
    "wait_processed",
]
