"""Committed offsets of consumer groups: the reliable "has this been processed?" signal.

The local broker's end offsets are unreliable (DESIGN.md §4), so progress and lag are read
from what a group has committed. A group commits an offset after its handler returned
(at-least-once), so `committed > offset` means the message at `offset` was processed.
"""

from __future__ import annotations

import asyncio
import time

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient


async def committed(
    bootstrap: str, group_id: str, partitions: list[TopicPartition]
) -> dict[tuple[str, int], int]:
    """`{(topic, partition): next offset to read}` as committed by the group.

    Partitions are always named: the local broker cannot answer the "all partitions" form of
    the offset-fetch request that aiokafka's admin client sends otherwise."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group_id, partitions=partitions)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


async def wait_processed(
    bootstrap: str, group_id: str, topic: str, partition: int, offset: int, *, timeout: float = 30
) -> None:
    """Wait until the group has committed past `offset` on the partition; TimeoutError if not."""
    deadline = time.monotonic() + timeout
    key = (topic, partition)
    while True:
        done = await committed(bootstrap, group_id, [TopicPartition(topic, partition)])
        if done.get(key, -1) > offset:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{group_id} did not process {topic}[{partition}]@{offset}")
        await asyncio.sleep(0.05)


__all__ = ["TopicPartition", "committed", "wait_processed"]
