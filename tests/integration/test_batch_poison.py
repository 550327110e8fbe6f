"""Batched consumption on the real broker (issue 15): one failing record in a batch is split
out, retried and dead-lettered alone; every other record of the batch is processed once, in
order, and the batch is committed."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from faststream.kafka import KafkaBroker
from pydantic import BaseModel

from schemas import topics
from services.endpoints import Endpoints
from services.settings import Settings
from services.stream.consumers import GroupRouter
from services.stream.dead_letters import read_letters
from services.stream.offsets import wait_caught_up
from services.stream.topics import create_topics
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration


class Note(BaseModel):
    text: str


class Wired:
    """The two things `GroupRouter` needs of a runtime."""

    def __init__(self, settings: Settings, prefix: str) -> None:
        self.settings = settings
        self._prefix = prefix

    def group_id(self, group: str) -> str:
        return f"{self._prefix}.{group}"


async def test_a_failing_record_is_split_out_of_its_batch_and_dead_lettered_alone(
    stack: Endpoints,
) -> None:
    run = uuid.uuid4().hex[:8]
    topic, prefix = f"test.batches.{run}", f"batches-{run}"
    await create_topics(stack.kafka_bootstrap, {topic: 1, topics.DLQ: 1})
    settings = make_settings(
        stack,
        f"batches_{run}",
        max_attempts=2,
        retry_backoff_ms=10,
        batch_max_records=500,
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
    )
    texts = [f"note {i}" for i in range(60)]
    sent: list[bytes] = [Note(text=t).model_dump_json().encode() for t in texts]
    sent.insert(20, Note(text="poison").model_dump_json().encode())  # valid, but its work fails
    sent.insert(41, b"\x00 not json at all")  # never reaches the work
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap)
    await producer.start()
    try:
        for value in sent:  # all written before the group joins: they arrive as one batch
            await producer.send_and_wait(topic, value, key=b"one-partition")
    finally:
        await producer.stop()

    calls: list[list[str]] = []
    stored: list[str] = []

    async def work(events: list[Note]) -> None:
        calls.append([e.text for e in events])
        if any(e.text == "poison" for e in events):
            raise RuntimeError("this note cannot be stored")
        stored.extend(e.text for e in events)

    group = GroupRouter("notes", Wired(settings, prefix), None)
    group.on_events(topic, Note, work, name="on_note")
    broker = KafkaBroker(stack.kafka_bootstrap)
    broker.include_router(group.router)
    await broker.start()
    try:
        deadline = time.monotonic() + 60
        while len(stored) < len(texts):
            assert time.monotonic() < deadline, f"stored {len(stored)} of {len(texts)}"
            await asyncio.sleep(0.05)
        await wait_caught_up(
            stack.kafka_bootstrap, f"{prefix}.notes", {(topic, 0): len(sent)}, timeout=30
        )
    finally:
        await broker.stop()

    assert stored == texts  # each good note once, in order
    assert len(calls[0]) == 61  # the first run had the whole batch (the garbage never got in)
    assert calls.count(["poison"]) == 2  # alone, tried max_attempts times
    letters = await read_letters(stack.kafka_bootstrap, group=f"{prefix}.notes")
    by_offset = {found.letter.offset: found.letter for found in letters}
    assert sorted(by_offset) == [20, 41]
    assert by_offset[20].error_type == "RuntimeError"
    assert by_offset[20].attempts == 2
    assert "cannot be stored" in by_offset[20].error
    assert by_offset[41].error_type == "ValidationError"
    assert by_offset[41].attempts == 0
