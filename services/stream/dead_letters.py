"""Reading and re-driving the dead-letter topic (`mnemostream dlq list|show|redrive`, and
the gateway's console: Kafka only, no store driver).

A dead letter keeps the failed message's value (as text and as exact bytes), key, source
topic/partition/offset, group, error and exception type (see `schemas.dead_letters.DeadLetter`).
Re-driving publishes the value, byte for byte and with its key, back to its source topic once
the cause is fixed; handlers are idempotent, so a message that had partly succeeded is safe to
process again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from pydantic import ValidationError

from schemas import topics
from schemas.dead_letters import DeadLetter
from services.stream.security import NO_OPTIONS


@dataclass(frozen=True, slots=True)
class Letter:
    """A dead letter and where it sits in the DLQ (partition, offset)."""

    partition: int
    offset: int
    letter: DeadLetter

    @property
    def ref(self) -> str:
        return f"{self.partition}:{self.offset}"


async def read_letters(
    bootstrap: str,
    *,
    limit: int = 1000,
    group: str | None = None,
    idle_ms: int = 800,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> list[Letter]:
    """The newest `limit` dead letters (of `group` only, if given), oldest first. The whole
    DLQ is read without a consumer group (reading commits nothing); unreadable records are
    skipped."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **kafka_options,
    )
    await consumer.start()
    out: list[Letter] = []
    try:
        parts = consumer.partitions_for_topic(topics.DLQ) or {0}
        consumer.assign([TopicPartition(topics.DLQ, p) for p in sorted(parts)])
        while True:
            batch = await consumer.getmany(timeout_ms=idle_ms, max_records=500)
            if not batch:
                break
            for records in batch.values():
                for record in records:
                    try:
                        letter = DeadLetter.model_validate_json(record.value or b"")
                    except ValidationError:
                        continue
                    if group is not None and letter.group != group:
                        continue
                    out.append(Letter(record.partition, record.offset, letter))
    finally:
        await consumer.stop()
    out.sort(key=lambda x: (x.letter.failed_at, x.partition, x.offset))
    return out[-limit:] if limit > 0 else []


async def redrive(
    bootstrap: str, letters: Sequence[Letter], *, kafka_options: Mapping[str, Any] = NO_OPTIONS
) -> int:
    """Publish each letter's value back to its source topic with its key: the exact bytes
    the letter holds, or, for a `partial` letter, the record read back from its source
    offset (`LookupError` if the log no longer has it)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, **kafka_options)
    await producer.start()
    try:
        for item in letters:
            letter = item.letter
            try:
                value = letter.value()
            except LookupError:
                value = await source_value(bootstrap, letter, kafka_options=kafka_options)
            await producer.send_and_wait(
                letter.source_topic,
                value,
                key=letter.key.encode() if letter.key is not None else None,
                headers=[
                    ("content-type", b"application/json"),
                    ("x-redriven-from", item.ref.encode()),
                ],
            )
    finally:
        await producer.stop()
    return len(letters)


async def source_value(
    bootstrap: str, letter: DeadLetter, *, kafka_options: Mapping[str, Any] = NO_OPTIONS
) -> bytes | None:
    """The value of the record a letter was written for, read from its topic at its offset."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, **kafka_options
    )
    await consumer.start()
    try:
        where = TopicPartition(letter.source_topic, letter.partition)
        consumer.assign([where])
        consumer.seek(where, letter.offset)
        record = await asyncio.wait_for(consumer.getone(), timeout=30)
    except TimeoutError as exc:
        raise LookupError(
            f"{letter.source_topic}[{letter.partition}]@{letter.offset} is gone"
        ) from exc
    finally:
        await consumer.stop()
    if record.offset != letter.offset:
        raise LookupError(f"{letter.source_topic}[{letter.partition}]@{letter.offset} is gone")
    value: bytes | None = record.value
    return value


async def letter_at(
    bootstrap: str,
    partition: int,
    offset: int,
    *,
    within_seconds: float = 10.0,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> Letter | None:
    """The dead letter at `partition:offset` of the DLQ (a `Letter.ref`), or None when the
    DLQ holds none there (no such record, or one that is not a dead letter)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, **kafka_options
    )
    await consumer.start()
    try:
        where = TopicPartition(topics.DLQ, partition)
        if partition not in (consumer.partitions_for_topic(topics.DLQ) or set()):
            return None
        end = (await consumer.end_offsets([where]))[where]
        if not 0 <= offset < end:
            return None
        consumer.assign([where])
        consumer.seek(where, offset)
        record = await asyncio.wait_for(consumer.getone(), timeout=within_seconds)
    except TimeoutError:
        return None
    finally:
        await consumer.stop()
    if record.offset != offset:
        return None
    try:
        return Letter(partition, offset, DeadLetter.model_validate_json(record.value or b""))
    except ValidationError:
        return None
