"""Undecodable records never stop a partition (issue 13 §1).

Every normal producer sends `content-type: application/json`; FastStream's default decoder
then parsed the body before our dead-letter guard ran, failed, and the consumer read the same
record again forever. Here, on every topic an event group consumes, each of five poison
shapes is published with that header, followed on the same partition by a valid event: the
valid event is processed, and each poison record is dead-lettered exactly once per group,
with its reason, exception type, origin and raw bytes. Request-reply topics answer a poison
request with an error instead, when it names a reply topic.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from schemas.callers import checkpoint_recorded, knowledge_submitted
from schemas.events import (
    EmbeddingRequested,
    EntityItem,
    FactItem,
    FactsExtracted,
    JobRequested,
    MemoryChanged,
    VectorTarget,
)
from schemas.inputs import memory_remembered, turn_recorded
from schemas.requests import ContextReply
from schemas.scope import Scope
from schemas.sealing import IngressEvent
from services.endpoints import Endpoints
from services.stream.asyncapi import CHANNELS
from services.stream.dead_letters import read_letters, redrive
from services.stream.guard import RAW_CAP_BYTES
from services.stream.offsets import wait_processed
from tests.support.mongo import stored_transcripts
from tests.support.pipeline import groups_running, subscriptions

pytestmark = pytest.mark.integration

JSON = [("content-type", b"application/json")]

POISON: dict[str, bytes | None] = {
    "empty": b"",
    "not-json": b"\x89PNG\r\n\x1a\n\x00\x00 these bytes are not JSON",
    "tombstone": None,
    "invalid-utf8-in-string": b'{"scope": {"agentWallet": "0x\xff\xfe"}, "note": "caf\xc3("}',
    "nested-100000-deep": b"[" * 100_000 + b"]" * 100_000,
}
"""The five shapes that wedged a partition, by name (None: a record with no value)."""

EXPECTED_TYPE = {
    "empty": "EmptyRecord",
    "tombstone": "EmptyRecord",
    "not-json": "ValidationError",
    "invalid-utf8-in-string": "ValidationError",
    "nested-100000-deep": "ValidationError",
}


def _valid_events(agent: str) -> dict[str, Callable[[int], Any]]:
    """A valid event for every event topic, the i-th of this test (distinct ids)."""
    scope = Scope(agent_wallet=agent, user_address="ana")
    return {
        topics.TURNS: lambda i: turn_recorded(
            {
                "agentWallet": agent,
                "userAddress": "ana",
                "threadId": "t",
                "userMessage": f"I live in Lisbon and my dog is called Rex number {i}.",
                "assistantMessage": "Noted.",
            }
        ),
        topics.REMEMBER: lambda i: memory_remembered(
            {"agentWallet": agent, "userAddress": "ana", "content": f"Ana likes tea {i}."}
        ),
        topics.FACTS: lambda i: FactsExtracted(
            scope=scope,
            turn_id=f"turn-{i}",
            session_id=f"session:{agent}:t",
            extractor="test",
            facts=[FactItem(text=f"Ana plays chess on day {i}.", type="skill", confidence=0.9)],
            entities=[EntityItem(name=f"Club {i}", type="organisation")],
        ),
        topics.CHANGED: lambda i: MemoryChanged(scope=scope, layers=["graph"], producer="test"),
        topics.KNOWLEDGE: lambda i: knowledge_submitted(
            {"agentWallet": agent, "content": f"Handbook page {i}: doors open at nine."}
        ),
        topics.WORKFLOWS: lambda i: checkpoint_recorded(
            {
                "agentWallet": agent,
                "runId": f"run-{i}",
                "agent": "planner",
                "type": "step_learning",
                "messages": [{"role": "assistant", "content": f"step {i} done"}],
            }
        ),
        topics.JOBS: lambda i: JobRequested(type="decay_update", params={"agentWallet": agent}),
        topics.EMBEDDINGS: lambda i: EmbeddingRequested(
            scope=scope,
            thread_id="t",
            model="all-MiniLM-L6-v2",
            targets=[VectorTarget(vector_id=f"vec_missing_{i}", text=f"Ana likes tea {i}.")],
        ),
        # a runtime's turn on its way to be sealed (forwarded as it is without a key)
        topics.INGRESS: lambda i: IngressEvent(
            topic=topics.TURNS,
            key=f"{agent}|t",
            agent=agent,
            user="ana",
            event=turn_recorded(
                {
                    "agentWallet": agent,
                    "userAddress": "ana",
                    "threadId": "t",
                    "userMessage": f"Through the ingress, number {i}.",
                    "assistantMessage": "Noted.",
                }
            ).model_dump_json(),
        ),
    }


EVENT_CHANNELS = [c for c in CHANNELS if c.consumers and c.reply is None]
REQUEST_CHANNELS = [c for c in CHANNELS if c.reply is not None]


def test_every_event_topic_has_a_valid_event_here() -> None:
    """A topic added to the AsyncAPI list without a case here fails (no silent gap)."""
    assert {c.topic for c in EVENT_CHANNELS} == set(_valid_events("0x"))


def _groups_of(topic: str) -> list[str]:
    [channel] = [c for c in CHANNELS if c.topic == topic]
    return sorted({consumer.split(".")[0] for consumer in channel.consumers})


@pytest.mark.parametrize("topic", [c.topic for c in EVENT_CHANNELS])
async def test_each_poison_shape_is_dead_lettered_once_and_the_next_event_is_processed(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, topic: str
) -> None:
    agent = f"0xpoison{uuid.uuid4().hex[:10]}"
    make = _valid_events(agent)[topic]
    groups = _groups_of(topic)
    async with groups_running(
        stack, minilm, "poisonrec", groups, extractor="rules", max_attempts=2
    ) as (rt, client):
        producer = client._require_producer()
        poison_at: dict[int, str] = {}
        valid_at: list[int] = []
        for i, (shape, value) in enumerate(POISON.items()):
            sent = await producer.send_and_wait(
                topic, value, key=agent.encode(), partition=0, headers=JSON
            )
            poison_at[sent.offset] = shape
            event = make(i)
            good = await producer.send_and_wait(
                topic,
                event.model_dump_json().encode(),
                key=agent.encode(),
                partition=0,
                headers=JSON,
            )
            valid_at.append(good.offset)
        ids = [g for g, t in subscriptions(rt.settings.group_prefix, groups) if t == topic]
        assert ids, f"no group reads {topic}"
        for group_id in ids:
            # committed past the last valid event: the partition moved on
            await wait_processed(
                stack.kafka_bootstrap, group_id, topic, 0, valid_at[-1], timeout=90
            )

        letters = [
            x.letter
            for x in await read_letters(stack.kafka_bootstrap)
            if x.letter.group in ids
            and x.letter.source_topic == topic
            and x.letter.partition == 0
            and min(poison_at) <= x.letter.offset <= valid_at[-1]
        ]
        for group_id in ids:
            mine = [x for x in letters if x.group == group_id]
            # exactly one letter per poison record, none for a valid event
            assert sorted(x.offset for x in mine) == sorted(poison_at), group_id
            for letter in mine:
                shape = poison_at[letter.offset]
                value = POISON[shape]
                assert letter.error_type == EXPECTED_TYPE[shape], (shape, letter.error)
                assert letter.error
                assert "\n" not in letter.error
                assert letter.attempts == 0  # retrying cannot fix an undecodable record
                assert letter.tombstone is (value is None)
                assert letter.size == len(value or b"")
                raw = base64.b64decode(letter.raw)
                assert raw == (value or b"")[: len(raw)]
                assert len(raw) == min(len(value or b""), RAW_CAP_BYTES)
                assert letter.redrive.endswith(f"--source {topic}:0:{letter.offset}")
        if topic == topics.TURNS:  # the valid turns were stored, in order
            [stored] = await stored_transcripts(
                rt.mongo[rt.settings.mongo.db], {"agentWallet": agent}
            )
            said = [m["content"] for m in stored["messages"] if m["role"] == "user"]
            assert said == [make(i).messages[0].content for i in range(len(POISON))]


async def test_a_null_or_non_utf8_header_value_does_not_stop_the_partition(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    """FastStream's parser decoded every header value as UTF-8 and raised before any
    handler ran; now such a record is handled like any other (here: a valid turn, stored)."""
    agent = f"0xheaders{uuid.uuid4().hex[:10]}"
    async with groups_running(stack, minilm, "poisonhdr", ["transcripts"]) as (rt, client):
        producer = client._require_producer()
        turns = [
            turn_recorded(
                {
                    "agentWallet": agent,
                    "threadId": "t",
                    "userMessage": f"message {i}",
                    "assistantMessage": "ok",
                }
            )
            for i in range(3)
        ]
        bad_headers = [
            [*JSON, ("trace", b"\xff\xfe\xfd")],
            [*JSON, ("trace", None)],
            JSON,
        ]
        last = None
        for turn, headers in zip(turns, bad_headers, strict=True):
            last = await producer.send_and_wait(
                topics.TURNS,
                turn.model_dump_json().encode(),
                key=agent.encode(),
                partition=1,
                headers=headers,
            )
        assert last is not None
        group_id = rt.group_id("transcripts")
        await wait_processed(
            stack.kafka_bootstrap, group_id, topics.TURNS, 1, last.offset, timeout=60
        )
        [stored] = await stored_transcripts(rt.mongo[rt.settings.mongo.db], {"agentWallet": agent})
        assert [m["content"] for m in stored["messages"] if m["role"] == "user"] == [
            "message 0",
            "message 1",
            "message 2",
        ]


@pytest.mark.parametrize("channel", REQUEST_CHANNELS, ids=lambda c: c.topic)
async def test_a_poison_request_is_answered_with_an_error(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, channel: Any
) -> None:
    groups = _groups_of(channel.topic)
    async with groups_running(stack, minilm, "poisonreq", groups) as (_, client):
        producer = client._require_producer()
        for shape, value in POISON.items():
            correlation = uuid.uuid4().hex
            future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            client._pending[correlation] = future
            client._listen(True)  # the reply topic is fetched only while a reply is awaited
            await producer.send_and_wait(
                channel.topic,
                value,
                key=b"k",
                headers=[
                    *JSON,
                    ("reply_to", client.reply_topic.encode()),
                    ("correlation_id", correlation.encode()),
                ],
            )
            reply = channel.reply.model_validate_json(await asyncio.wait_for(future, 30))
            assert reply.error, (channel.topic, shape)
            if isinstance(reply, ContextReply):
                assert reply.prompt is None
        # a poison request with no reply topic is dropped; the next request is answered
        await producer.send_and_wait(channel.topic, b"", key=b"k", headers=JSON)
        if channel.topic == topics.SEARCH:
            answer = await client.context("anything", {"agentWallet": "0xnobody"})
            assert answer.error is None


async def test_a_redrive_publishes_the_exact_bytes_of_a_poison_record(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> None:
    """The letter keeps the raw value (base64), so a redrive re-publishes it byte for byte,
    even when it is not UTF-8 (the text payload alone would have replaced those bytes)."""
    agent = f"0xredrive{uuid.uuid4().hex[:10]}"
    value = POISON["invalid-utf8-in-string"]
    assert value is not None
    async with groups_running(stack, minilm, "poisonrd", ["invalidation"]) as (rt, client):
        producer = client._require_producer()
        sent = await producer.send_and_wait(
            topics.CHANGED, value, key=agent.encode(), partition=2, headers=JSON
        )
        group_id = rt.group_id("invalidation")
        await wait_processed(stack.kafka_bootstrap, group_id, topics.CHANGED, 2, sent.offset)
        [letter] = [
            x
            for x in await read_letters(stack.kafka_bootstrap)
            if x.letter.group == group_id
            and (x.letter.partition, x.letter.offset) == (2, sent.offset)
        ]
        assert letter.letter.value() == value
        assert await redrive(stack.kafka_bootstrap, [letter]) == 1
        again = [
            x
            for x in await read_letters(stack.kafka_bootstrap)
            if x.letter.group == group_id and x.ref != letter.ref
        ]
        deadline = asyncio.get_running_loop().time() + 30
        while not again:  # the re-driven copy fails the same way: a second, identical letter
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.2)
            again = [
                x
                for x in await read_letters(stack.kafka_bootstrap)
                if x.letter.group == group_id and x.ref != letter.ref
            ]
        assert again[0].letter.value() == value
