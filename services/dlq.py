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
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from aiokafka import ConsumerRecord
from faststream.kafka import KafkaBroker
from faststream.kafka.message import KafkaMessage
from pydantic import BaseModel, ValidationError
from pymongo.errors import ConnectionFailure
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from engine.errors import InputRejected
from schemas import topics
from schemas.limits import MAX_MESSAGE_BYTES
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
    redrive: str = ""
    """The command that re-publishes this message once its cause is fixed (empty in letters
    written before it was recorded; `mnemostream dlq redrive --group G` still finds those)."""


def redrive_command(group: str, topic: str, partition: int, offset: int) -> str:
    """`mnemostream dlq redrive` naming one failed message by its group and origin."""
    return f"mnemostream dlq redrive --group {group} --source {topic}:{partition}:{offset}"


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
    outage_seconds: float = 120.0,
) -> bool:
    """Decode and process one message; True if processed, False if dead-lettered. With
    `metrics`, counts the outcome, each failed attempt and retry, and the handling time.

    A failure because a store is unreachable (`is_outage`) is not the message's fault: it is
    retried with backoff (capped at `OUTAGE_BACKOFF_MAX_SECONDS`) without using up
    `attempts`, so an outage never dead-letters anything. After `outage_seconds` of outage
    `StoreUnavailable` is raised: the subscriber does not commit, seeks back and reads the
    message again (the wait stays below Kafka's poll interval, so the member keeps its
    partitions)."""
    probe = EventProbe(metrics, group, _record(message).topic)
    if len(message.body) > MAX_MESSAGE_BYTES:  # never decode what the edge would refuse
        size = f"{len(message.body)} bytes, more than {MAX_MESSAGE_BYTES}"
        await _dead_letter(broker, message, group, size, "MessageTooLarge", 0, probe)
        return False
    try:
        event = contract.model_validate_json(message.body)
    except ValidationError as exc:
        await _dead_letter(broker, message, group, first_error(exc), "ValidationError", 0, probe)
        return False
    attempt, outage = 0, Outage(backoff_ms / 1000, outage_seconds)
    while True:
        try:
            await work(event)
            probe.processed()
            return True
        except InputRejected as exc:
            kind = type(exc).__name__
            await _dead_letter(broker, message, group, str(exc), kind, attempt + 1, probe)
            return False
        except Exception as exc:
            kind = type(exc).__name__
            if is_outage(exc):
                probe.retrying(kind)
                await outage.wait(exc, group)
                continue
            attempt += 1
            if attempt >= attempts:
                log.exception("giving up after %d attempts", attempt, extra={"group": group})
                await _dead_letter(broker, message, group, str(exc), kind, attempt, probe)
                return False
            probe.retrying(kind)
            delay = backoff_ms * 2 ** (attempt - 1) / 1000
            log.warning("attempt %d failed (%s), retrying in %.2fs", attempt, exc, delay)
            await asyncio.sleep(delay)


OUTAGE_BACKOFF_MAX_SECONDS = 5.0


class StoreUnavailable(RuntimeError):
    """A store stayed unreachable for the whole outage wait; the message was not committed."""


def is_outage(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it was raised from) says a store cannot be reached:
    MongoDB connection failures (server selection, network timeouts, reconnects) and Redis
    connection errors and timeouts."""
    seen: BaseException | None = exc
    for _ in range(10):  # causes chain a few levels deep at most
        if seen is None:
            return False
        if isinstance(seen, ConnectionFailure | RedisConnectionError | RedisTimeoutError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Outage:
    """Backoff for one message while its store is unreachable."""

    def __init__(self, first_delay: float, limit_seconds: float) -> None:
        self._delay = max(first_delay, 0.05)
        self._limit = limit_seconds
        self._began: float | None = None

    async def wait(self, exc: BaseException, group: str) -> None:
        now = time.monotonic()
        self._began = self._began if self._began is not None else now
        if now - self._began >= self._limit:
            raise StoreUnavailable(f"store unreachable for {now - self._began:.0f}s: {exc}")
        log.warning(
            "store unreachable (%s); retrying in %.1fs, the message stays in place",
            exc,
            self._delay,
            extra={"group": group},
        )
        await asyncio.sleep(self._delay)
        self._delay = min(self._delay * 2, OUTAGE_BACKOFF_MAX_SECONDS)


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
        payload=_replayable(message.body).decode("utf-8", "replace"),
        failed_at=datetime.now(UTC),
        redrive=redrive_command(group, record.topic, record.partition, record.offset),
    )
    log.error("dead-lettered %s[%d]@%d: %s", record.topic, record.partition, record.offset, error)
    await broker.publish(letter, topics.DLQ, key=record.key)
    probe.dead_lettered(kind)


def _replayable(body: bytes) -> bytes:
    """The body, or only the head of an oversized one (it can never be re-driven anyway, and
    its letter, escaped as JSON, must still fit in one message)."""
    return body if len(body) <= MAX_MESSAGE_BYTES else body[: MAX_MESSAGE_BYTES // 8]


def _record(message: KafkaMessage) -> ConsumerRecord:
    raw = message.raw_message
    return raw[0] if isinstance(raw, tuple) else raw
