"""Bounded retries, then the dead-letter topic: one bad message never wedges a partition.

`consume` decodes a message into its contract and runs the work. Invalid input goes to the
DLQ at once (retrying cannot fix it); a failing dependency is retried with exponential
backoff, then dead-lettered with its error, exception type, group and source
topic/partition/offset. Either way the handler returns normally, so the offset is committed
and the partition moves on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from aiokafka import ConsumerRecord
from faststream.kafka import KafkaBroker
from faststream.kafka.message import KafkaMessage
from pydantic import BaseModel, ValidationError

from engine.errors import InputRejected
from schemas import topics
from schemas.scope import first_error
from services.metrics import EventProbe, Metrics

log = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseModel)


class DeadLetter(BaseModel):
    """What the DLQ holds for one failed message."""

    group: str
    source_topic: str
    partition: int
    offset: int
    key: str | None
    error: str
    error_type: str
    attempts: int
    payload: str
    failed_at: datetime


async def consume(
    broker: KafkaBroker,
    message: KafkaMessage,
    *,
    group: str,
    contract: type[E],
    work: Callable[[E], Awaitable[Any]],
    attempts: int,
    backoff_ms: int,
    metrics: Metrics | None = None,
) -> bool:
    """Decode and process one message; True if processed, False if dead-lettered. With
    `metrics`, counts the outcome, each failed attempt and retry, and the handling time."""
    probe = EventProbe(metrics, group, _record(message).topic)
    try:
        event = contract.model_validate_json(message.body)
    except ValidationError as exc:
        await _dead_letter(broker, message, group, first_error(exc), "ValidationError", 0, probe)
        return False
    for attempt in range(1, attempts + 1):
        try:
            await work(event)
            probe.processed()
            return True
        except InputRejected as exc:
            kind = type(exc).__name__
            await _dead_letter(broker, message, group, str(exc), kind, attempt, probe)
            return False
        except Exception as exc:
            kind = type(exc).__name__
            if attempt == attempts:
                log.exception("giving up after %d attempts", attempt, extra={"group": group})
                await _dead_letter(broker, message, group, str(exc), kind, attempt, probe)
                return False
            probe.retrying(kind)
            delay = backoff_ms * 2 ** (attempt - 1) / 1000
            log.warning("attempt %d failed (%s), retrying in %.2fs", attempt, exc, delay)
            await asyncio.sleep(delay)
    return False


async def _dead_letter(
    broker: KafkaBroker,
    message: KafkaMessage,
    group: str,
    error: str,
    kind: str,
    attempts: int,
    probe: EventProbe,
) -> None:
    record = _record(message)
    key = record.key.decode("utf-8", "replace") if isinstance(record.key, bytes) else None
    letter = DeadLetter(
        group=group,
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=key,
        error=error[:2000],
        error_type=kind,
        attempts=attempts,
        payload=message.body.decode("utf-8", "replace"),
        failed_at=datetime.now(UTC),
    )
    log.error("dead-lettered %s[%d]@%d: %s", record.topic, record.partition, record.offset, error)
    await broker.publish(letter, topics.DLQ, key=record.key)
    probe.dead_lettered(kind)


def _record(message: KafkaMessage) -> ConsumerRecord:
    raw = message.raw_message
    return raw[0] if isinstance(raw, tuple) else raw
