"""Handing a batch's unfinished records back to the next poll, and committing the rest.

A batch message's records were read by one `AIOKafkaConsumer`; its position on each
partition is past them, and FastStream's `ack` commits those positions. Seeking a partition
back to its first unfinished record makes the next poll read that record again and the
commit stop before it: what was finished is committed, what was not is read again, and
nothing is lost or run twice (`services.stream.batches`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError
from faststream.kafka.message import KafkaMessage

from services.stream.metrics import Metrics

log = logging.getLogger(__name__)

Rewinder: TypeAlias = Callable[[Sequence[ConsumerRecord[Any, Any]]], None]
"""Hands the given records back to the next poll."""


class Rewind:
    """Hands records back to the next poll of `consumer`: each of their partitions is sought
    to the first of them. A partition the consumer no longer holds (the group rebalanced
    meanwhile) is left alone: its new owner reads it from the committed offset."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer

    def __call__(self, records: Sequence[ConsumerRecord[Any, Any]]) -> None:
        first: dict[TopicPartition, int] = {}
        for record in records:
            tp = TopicPartition(record.topic, record.partition)
            first[tp] = min(first.get(tp, record.offset), record.offset)
        held = self._consumer.assignment()
        for tp, offset in first.items():
            if tp in held:
                self._consumer.seek(tp, offset)


def rewind_of(message: KafkaMessage) -> Rewinder | None:
    """How to hand records of `message` back; None when its consumer cannot read them again
    (the in-memory test broker's): such a batch is run whole."""
    consumer = getattr(message, "consumer", None)
    return Rewind(consumer) if isinstance(consumer, AIOKafkaConsumer) else None


async def commit(message: KafkaMessage, group: str, metrics: Metrics | None) -> bool:
    """Commit the batch `message` (what its consumer has read, less what was handed back);
    whether the broker took it.

    A commit refused because the group rebalanced while the batch was worked
    (`CommitFailedError`: the consumer did not poll within `max_poll_interval_ms`, or a member
    joined or left and the partitions moved) is not the batch's fault: the consumer rejoins
    the group on its next poll, and whoever holds the partitions then reads the uncommitted
    records again (at-least-once; the work is idempotent). The group goes on instead of
    standing still; `mnemostream_batch_commits_refused_total` counts these."""
    try:
        await message.ack()
    except (CommitFailedError, IllegalStateError) as exc:
        cause = f" after {type(exc.__cause__).__name__}" if exc.__cause__ is not None else ""
        log.warning(
            "the batch's commit was refused (%s%s: the group rebalanced while it was "
            "worked); the consumer rejoins on its next poll and the uncommitted records are "
            "read again",
            type(exc).__name__,
            cause,
            extra={"group": group},
        )
        if metrics is not None:
            metrics.commits_refused.labels(group=group).inc()
        return False
    return True
