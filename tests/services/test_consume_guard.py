"""The DLQ guard on FastStream's in-memory test broker: bounded retries with backoff, then a
dead letter carrying the error and the message's origin; the handler always returns, so the
partition moves on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from faststream.kafka.annotations import KafkaMessage
from pymongo.errors import ServerSelectionTimeoutError
from redis.exceptions import ConnectionError as RedisConnectionError

from engine.errors import DependencyFailed, InputRejected
from schemas import topics
from schemas.events import MemoryChanged
from schemas.scope import Scope
from services.stream.guard import DeadLetter, StoreUnavailable, consume, is_outage, retried
from services.stream.metrics import EventProbe

SOURCE = "test.source.v1"


def make_app(failures: list[BaseException]) -> tuple[KafkaBroker, list[Any], list[DeadLetter]]:
    """A broker whose handler raises the queued failures in order, then succeeds."""
    broker = KafkaBroker()
    dead_letters = broker.publisher(topics.DLQ)
    processed: list[Any] = []
    letters: list[DeadLetter] = []

    async def work(event: MemoryChanged) -> None:
        if failures:
            raise failures.pop(0)
        processed.append(event)

    @broker.subscriber(SOURCE, group_id="g")
    async def handle(message: KafkaMessage) -> None:
        await consume(
            dead_letters,
            message,
            group="test.group",
            contract=MemoryChanged,
            work=work,
            attempts=3,
            backoff_ms=1,
        )

    @broker.subscriber(topics.DLQ, group_id="dlq-reader")
    async def read_dlq(letter: DeadLetter) -> None:
        letters.append(letter)

    return broker, processed, letters


def changed() -> MemoryChanged:
    return MemoryChanged(
        scope=Scope.parse({"agentWallet": "0xA"}), layers=["working"], producer="test"
    )


async def test_transient_failures_are_retried_then_processed() -> None:
    broker, processed, letters = make_app(
        [DependencyFailed("mongo down"), DependencyFailed("still down")]
    )
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    assert len(processed) == 1
    assert letters == []


async def test_a_persistent_failure_is_dead_lettered_after_the_last_attempt() -> None:
    broker, processed, letters = make_app([DependencyFailed(f"down {i}") for i in range(3)])
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
        await br.publish(changed(), SOURCE, key=b"k")  # the next message is still processed
    assert len(processed) == 1
    [letter] = letters
    assert letter.attempts == 3
    assert letter.error == "down 2"
    assert letter.error_type == "DependencyFailed"
    assert letter.group == "test.group"
    assert letter.source_topic == SOURCE
    assert letter.key == "k"
    assert MemoryChanged.model_validate_json(letter.payload).producer == "test"


async def test_rejected_input_is_dead_lettered_without_retry() -> None:
    broker, processed, letters = make_app([InputRejected("impossible content")])
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    assert processed == []
    [letter] = letters
    assert letter.attempts == 1
    assert letter.error_type == "InputRejected"


@pytest.mark.parametrize("payload", [b"not json", b'{"scope": {}}', b"[]"])
async def test_a_schema_error_is_dead_lettered_with_its_message(payload: bytes) -> None:
    broker, processed, letters = make_app([])
    async with TestKafkaBroker(broker) as br:
        await br.publish(payload, SOURCE, key=b"k")
    assert processed == []
    [letter] = letters
    assert letter.error_type == "ValidationError"
    assert letter.attempts == 0
    assert letter.payload == payload.decode()
    assert letter.error


def outage(n: int) -> DependencyFailed:
    """What a Mongo adapter raises while the server is unreachable."""
    try:
        raise ServerSelectionTimeoutError(f"127.0.0.1:1: connection refused ({n})")
    except ServerSelectionTimeoutError as exc:
        try:
            raise DependencyFailed(f"transcript append failed: {exc}") from exc
        except DependencyFailed as wrapped:
            return wrapped


async def test_a_store_outage_is_waited_out_and_dead_letters_nothing() -> None:
    # five failures in a row would exhaust three attempts; an outage does not count
    broker, processed, letters = make_app([outage(i) for i in range(5)])
    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    assert len(processed) == 1
    assert letters == []


def test_only_unreachable_stores_count_as_outages() -> None:
    assert is_outage(outage(0))
    assert not is_outage(DependencyFailed("cache bump failed"))
    assert is_outage(RedisConnectionError("connection refused"))
    assert not is_outage(ValueError("bad data"))
    assert not is_outage(InputRejected("no"))


async def test_an_outage_longer_than_the_wait_hands_the_message_back() -> None:
    async def work(event: MemoryChanged) -> None:
        raise outage(0)

    broker = KafkaBroker()
    dead_letters = broker.publisher(topics.DLQ)
    raised: list[BaseException] = []

    @broker.subscriber(SOURCE, group_id="g")
    async def handle(message: KafkaMessage) -> None:
        try:
            await consume(
                dead_letters,
                message,
                group="test.group",
                contract=MemoryChanged,
                work=work,
                attempts=3,
                backoff_ms=1,
                outage_seconds=0.2,
            )
        except StoreUnavailable as exc:
            raised.append(exc)

    async with TestKafkaBroker(broker) as br:
        await br.publish(changed(), SOURCE, key=b"k")
    assert len(raised) == 1
    assert "unreachable" in str(raised[0])


async def test_a_cancellation_is_never_retried_nor_dead_lettered() -> None:
    """The retry library catches whatever an attempt raises: a cancelled consumer must stop at
    once, not retry, and leave the record to the next owner of its partition."""
    calls, letters = 0, []

    async def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    async def letter(error: str, kind: str, tried: int) -> None:
        letters.append(kind)

    with pytest.raises(asyncio.CancelledError):
        await retried_thrice(cancelled, letter)
    assert (calls, letters) == (1, [])


async def test_an_outage_between_failures_uses_up_no_attempt() -> None:
    failures: list[BaseException] = [
        DependencyFailed("a"),
        ServerSelectionTimeoutError("no primary"),
        ServerSelectionTimeoutError("no primary"),
        DependencyFailed("b"),
        DependencyFailed("c"),
    ]
    letters: list[tuple[str, int]] = []

    async def work() -> None:
        raise failures.pop(0)

    async def letter(error: str, kind: str, tried: int) -> None:
        letters.append((error, tried))

    done = await retried_thrice(work, letter)
    assert done is False
    assert letters == [("c", 3)]
    assert failures == []


async def retried_thrice(
    work: Callable[[], Awaitable[None]], letter: Callable[[str, str, int], Awaitable[None]]
) -> bool:
    return await retried(
        work,
        group="g",
        attempts=3,
        backoff_ms=1,
        outage_seconds=5,
        probe=EventProbe(None, "g", SOURCE),
        dead_letter=letter,
    )
