"""The id rule on Kafka: a record whose ids break `schemas.scope.Id` (written by hand, or by an
old producer that trimmed nothing) fails its contract, so the consumer dead-letters it with
the field named, without retrying and without running the handler."""

from __future__ import annotations

import json
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from faststream.kafka.annotations import KafkaMessage
from pydantic import BaseModel

from schemas import topics
from schemas.events import TurnRecorded
from schemas.inputs import turn_recorded
from schemas.requests import ItemRequest
from services.stream.guard import DeadLetter, consume

SOURCE = "test.ids.v1"


def make_app(contract: type[BaseModel]) -> tuple[KafkaBroker, list[Any], list[DeadLetter]]:
    broker = KafkaBroker()
    dead_letters = broker.publisher(topics.DLQ)
    processed: list[Any] = []
    letters: list[DeadLetter] = []

    async def work(event: BaseModel) -> None:
        processed.append(event)

    @broker.subscriber(SOURCE, group_id="g")
    async def handle(message: KafkaMessage) -> None:
        await consume(
            dead_letters,
            message,
            group="test.ids",
            contract=contract,
            work=work,
            attempts=3,
            backoff_ms=1,
        )

    @broker.subscriber(topics.DLQ, group_id="dlq-reader")
    async def read_dlq(letter: DeadLetter) -> None:
        letters.append(letter)

    return broker, processed, letters


def turn_json(**scope: str) -> dict[str, Any]:
    body = {"agentWallet": "0xA", "userAddress": "alice", "threadId": "t1"}
    event = turn_recorded({**body, "userMessage": "hi", "assistantMessage": "hello"})
    data: dict[str, Any] = json.loads(event.model_dump_json())
    data["scope"].update(scope)
    return data


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            turn_json(userAddress="alice "),
            "scope.userAddress: must not start or end with whitespace",
        ),
        (
            turn_json(agentWallet="\t0xA"),
            "scope.agentWallet: must not start or end with whitespace",
        ),
        (turn_json(threadId="t\x001"), "scope.threadId: must not contain control characters"),
        ({**turn_json(), "session_id": "s1 "}, "session_id: must not start or end with whitespace"),
        ({**turn_json(), "turn_id": " t"}, "turn_id: must not start or end with whitespace"),
    ],
)
async def test_a_turn_with_a_bad_id_is_dead_lettered(payload: dict[str, Any], message: str) -> None:
    broker, processed, letters = make_app(TurnRecorded)
    async with TestKafkaBroker(broker) as br:
        await br.publish(json.dumps(payload).encode(), SOURCE, key=b"k")
    assert processed == []
    [letter] = letters
    assert (letter.error_type, letter.attempts) == ("ValidationError", 0)
    assert letter.error == message


async def test_a_good_turn_is_processed_and_a_bad_item_request_is_dead_lettered() -> None:
    broker, processed, letters = make_app(TurnRecorded)
    async with TestKafkaBroker(broker) as br:
        await br.publish(json.dumps(turn_json()).encode(), SOURCE, key=b"k")
    assert len(processed) == 1
    assert letters == []

    broker, processed, letters = make_app(ItemRequest)
    request = {"scope": {"agentWallet": "0xA", "userAddress": "alice"}, "op": "get", "id": "x "}
    async with TestKafkaBroker(broker) as br:
        await br.publish(json.dumps(request).encode(), SOURCE, key=b"k")
    assert processed == []
    assert [letter.error for letter in letters] == ["id: must not start or end with whitespace"]
