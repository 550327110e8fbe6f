"""Bounded retries, then the dead-letter topic: one bad message never wedges a partition.

`consume` decodes a message into its contract and runs the work. Invalid input goes to the
DLQ at once (retrying cannot fix it); a failing dependency is retried with exponential
backoff, then dead-lettered with its error, exception type, group and source
topic/partition/offset. Either way the handler returns normally, so the offset is committed
and the partition moves on.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka import ConsumerRecord
from faststream.kafka.message import KafkaMessage
from pydantic import BaseModel, ValidationError
from pymongo.errors import ConnectionFailure
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from engine.errors import InputRejected

# re-exported: the consumers' side of the contract lives here too
from schemas.dead_letters import RAW_CAP_BYTES as RAW_CAP_BYTES
from schemas.dead_letters import DeadLetter as DeadLetter
from schemas.limits import MAX_MESSAGE_BYTES
from schemas.scope import first_error
from services.stream.metrics import EventProbe, Metrics
from services.stream.telemetry import caused_by, trace_id_of

if TYPE_CHECKING:
    from faststream.kafka.publisher.usecase import DefaultPublisher

log = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseModel)


PAYLOAD_CAP_CHARS = MAX_MESSAGE_BYTES // 8
"""Characters of `payload` kept when the whole value would make the letter too big to publish
(escaped as JSON a character can take 6 bytes)."""
PAYLOAD_MAX_BYTES = 900_000
"""Largest `payload` escaped as JSON: with `raw` and the rest the letter stays below the
Kafka producer's default 1 MiB request limit."""


def redrive_command(group: str, topic: str, partition: int, offset: int) -> str:
    """`mnemostream dlq redrive` naming one failed message by its group and origin."""
    return f"mnemostream dlq redrive --group {group} --source {topic}:{partition}:{offset}"


async def consume(
    dead_letters: DefaultPublisher,
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
    """Decode and process one message; True if processed, False if dead-lettered (through
    `dead_letters`, a publisher to `topics.DLQ`, keyed like the failed record). With
    `metrics`, counts the outcome, each failed attempt and retry, and the handling time.

    A failure because a store is unreachable (`is_outage`) is not the message's fault: it is
    retried with backoff (capped at `OUTAGE_BACKOFF_MAX_SECONDS`) without using up
    `attempts`, so an outage never dead-letters anything. After `outage_seconds` of outage
    `StoreUnavailable` is raised: the subscriber does not commit, seeks back and reads the
    message again (the wait stays below Kafka's poll interval, so the member keeps its
    partitions)."""
    probe = EventProbe(metrics, group, _record(message).topic)
    rejected = undecodable(message.body, tombstone=_record(message).value is None)
    if rejected is not None:
        await _dead_letter(dead_letters, message, group, rejected[1], rejected[0], 0, probe)
        return False
    try:
        event = contract.model_validate_json(message.body)
    except ValidationError as exc:
        await _dead_letter(
            dead_letters, message, group, first_error(exc), "ValidationError", 0, probe
        )
        return False
    except (ValueError, RecursionError) as exc:  # a validator that failed its own way
        await _dead_letter(dead_letters, message, group, str(exc), type(exc).__name__, 0, probe)
        return False

    async def letter(error: str, kind: str, tried: int) -> None:
        await _dead_letter(dead_letters, message, group, error, kind, tried, probe)

    return await retried(
        lambda: work(event),
        group=group,
        attempts=attempts,
        backoff_ms=backoff_ms,
        outage_seconds=outage_seconds,
        probe=probe,
        dead_letter=letter,
    )


async def retried(
    work: Callable[[], Awaitable[Any]],
    *,
    group: str,
    attempts: int,
    backoff_ms: int,
    outage_seconds: float,
    probe: EventProbe,
    dead_letter: Callable[[str, str, int], Awaitable[None]],
) -> bool:
    """The one retry loop of a record, for single messages (`consume`) and for a batch's
    record that failed (`services.stream.batches`): True once `work()` succeeded, False once
    `dead_letter(error, error type, attempts)` took it. `InputRejected` is dead-lettered at
    once; another failure is retried `attempts` times with exponential backoff from
    `backoff_ms` (tenacity's loop, stop and wait); a cancellation is never retried. An outage
    (`is_outage`) is waited out inside the attempt (`through_outages`), so it uses up none,
    until `outage_seconds` raise `StoreUnavailable`."""
    outage = Outage(backoff_ms / 1000, outage_seconds)
    tried = 0

    def log_retry(state: RetryCallState) -> None:
        outcome = state.outcome
        failure = outcome.exception() if outcome is not None else None
        probe.retrying(type(failure).__name__)
        delay = state.upcoming_sleep
        log.warning("attempt %d failed (%s), retrying in %.2fs", tried, failure, delay)

    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_retriable),
            stop=stop_after_attempt(max(attempts, 1)),
            wait=wait_exponential(multiplier=backoff_ms / 1000),
            before_sleep=log_retry,
            reraise=True,
        ):
            with attempt:
                tried = attempt.retry_state.attempt_number
                await through_outages(work, outage, group, probe)
    except InputRejected as exc:
        await dead_letter(str(exc), type(exc).__name__, tried)
        return False
    except StoreUnavailable:
        raise
    except Exception as exc:
        log.exception("giving up after %d attempts", tried, extra={"group": group})
        await dead_letter(str(exc), type(exc).__name__, tried)
        return False
    probe.processed()
    return True


def _retriable(exc: BaseException) -> bool:
    return isinstance(exc, Exception) and not isinstance(exc, InputRejected | StoreUnavailable)


async def through_outages(
    work: Callable[[], Awaitable[Any]], outage: Outage, group: str, probe: EventProbe
) -> Any:
    """`work()`, run again after each failure because a store is unreachable (the message is
    not at fault), with `outage`'s backoff until it raises `StoreUnavailable`."""
    while True:
        try:
            return await work()
        except Exception as exc:
            if not is_outage(exc):
                raise
            probe.retrying(type(exc).__name__)
            await outage.wait(exc, group)


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


def undecodable(body: bytes, *, tombstone: bool) -> tuple[str, str] | None:
    """(error type, reason) for a value no contract can accept before it is parsed: none at
    all (a tombstone), empty, or larger than `MAX_MESSAGE_BYTES`; None otherwise."""
    if tombstone:
        return "EmptyRecord", "the record has no value (a tombstone)"
    if not body:
        return "EmptyRecord", "the record's value is empty"
    if len(body) > MAX_MESSAGE_BYTES:  # never decode what the edge would refuse
        return "MessageTooLarge", f"{len(body)} bytes, more than {MAX_MESSAGE_BYTES}"
    return None


async def _dead_letter(
    dead_letters: DefaultPublisher,
    message: KafkaMessage,
    group: str,
    error: str,
    kind: str,
    attempts: int,
    probe: EventProbe,
) -> None:
    await send_dead_letter(
        dead_letters, _record(message), message.body, group, error, kind, attempts, probe
    )


async def send_dead_letter(
    dead_letters: DefaultPublisher,
    record: ConsumerRecord[Any, Any],
    body: bytes,
    group: str,
    error: str,
    kind: str,
    attempts: int,
    probe: EventProbe,
) -> None:
    """Publish the letter of `record` (whose value is `body`) and count it."""
    key = record.key.decode("utf-8", "replace") if isinstance(record.key, bytes) else None
    letter = dead_letter(
        body,
        tombstone=record.value is None,
        group=group,
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=key,
        error=error,
        error_type=kind,
        attempts=attempts,
    )
    with caused_by(record):  # the letter continues the record's trace (a batch's record)
        letter = letter.model_copy(update={"trace_id": trace_id_of(record)})
        log.error(
            "dead-lettered %s[%d]@%d: %s", record.topic, record.partition, record.offset, error
        )
        await dead_letters.publish(letter, key=record.key)
    probe.dead_lettered(kind)


def dead_letter(
    body: bytes,
    *,
    tombstone: bool,
    group: str,
    source_topic: str,
    partition: int,
    offset: int,
    key: str | None,
    error: str,
    error_type: str,
    attempts: int,
) -> DeadLetter:
    """The letter of one failed value. It always fits in one message: the value is kept whole
    (as text, and as exact bytes up to `RAW_CAP_BYTES`) when it can be, else only its head,
    and the letter says it is `partial`."""
    text = body.decode("utf-8", "replace")
    exact = len(body) <= RAW_CAP_BYTES or text.encode() == body
    whole = len(body) <= PAYLOAD_CAP_CHARS or len(json.dumps(text)) <= PAYLOAD_MAX_BYTES
    return DeadLetter(
        group=group,
        source_topic=source_topic,
        partition=partition,
        offset=offset,
        key=key,
        error=" ".join(error.split())[:2000],
        error_type=error_type,
        attempts=attempts,
        payload=text if whole else text[:PAYLOAD_CAP_CHARS],
        failed_at=datetime.now(UTC),
        redrive=redrive_command(group, source_topic, partition, offset),
        raw=base64.b64encode(body[:RAW_CAP_BYTES]).decode("ascii"),
        size=len(body),
        tombstone=tombstone,
        partial=not (exact and whole),
    )


def _record(message: KafkaMessage) -> ConsumerRecord:
    raw = message.raw_message
    return raw[0] if isinstance(raw, tuple) else raw
