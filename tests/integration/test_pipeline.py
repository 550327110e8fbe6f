"""The foundation slice end to end: transcripts, invalidation and search run as three
separate OS processes against one broker, one MongoDB-wire server and one Redis."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from schemas import topics
from schemas.inputs import turn_recorded
from schemas.requests import ContextReply
from services.endpoints import Endpoints
from services.sdk.client import MemoryClient
from services.stream.offsets import start_at_end, wait_processed
from tests.support.mongo import stored_transcripts
from tests.support.pipeline import drained, subscriptions

pytestmark = pytest.mark.integration

GROUPS = ("transcripts", "embeddings", "facts", "invalidation", "search")


@dataclass
class Pipeline:
    endpoints: Endpoints
    database: str
    group_prefix: str
    processes: dict[str, subprocess.Popen[bytes]]


@pytest.fixture(scope="module")
def pipeline(stack: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    tag = os.urandom(4).hex()
    logs = tmp_path_factory.mktemp("pipeline-logs")
    env = {
        **os.environ,
        **stack.to_env(),
        "MNEMOSTREAM_MONGO_DB": f"pipeline_{tag}",
        "MNEMOSTREAM_GROUP_PREFIX": f"pipeline-{tag}",
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
    }
    # schema first, once, before any consumer runs (docs/operations.md#local-servers)
    subprocess.run(
        [sys.executable, "-m", "services", "db", "init"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    # the topics are shared by the session's tests: start at their ends (see groups_running)
    asyncio.run(
        start_at_end(stack.kafka_bootstrap, subscriptions(env["MNEMOSTREAM_GROUP_PREFIX"], GROUPS))
    )
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for group in GROUPS:
            log = (logs / f"{group}.log").open("wb")
            processes[group] = subprocess.Popen(
                [sys.executable, "-m", "services", "run", group],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        yield Pipeline(
            stack, env["MNEMOSTREAM_MONGO_DB"], env["MNEMOSTREAM_GROUP_PREFIX"], processes
        )
    finally:
        for proc in processes.values():
            proc.send_signal(signal.SIGTERM)
        for group, proc in processes.items():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            tail = Path(logs / f"{group}.log").read_text(errors="replace")[-2000:]
            print(f"--- {group} (exit {proc.returncode}) ---\n{tail}")


@pytest.fixture
async def client(pipeline: Pipeline) -> AsyncIterator[MemoryClient]:
    async with MemoryClient(pipeline.endpoints.kafka_bootstrap, timeout=15) as c:
        yield c


@pytest.fixture
async def db(pipeline: Pipeline) -> AsyncIterator[Any]:
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(pipeline.endpoints.mongo_uri)
    yield mongo[pipeline.database]
    await mongo.close()


def _alive(pipeline: Pipeline) -> None:
    for group, proc in pipeline.processes.items():
        assert proc.poll() is None, f"{group} process exited with {proc.returncode}"


async def _processed(client: MemoryClient, pipeline: Pipeline, group: str = "transcripts") -> None:
    """The client's last event handled by `group`; after a turn, its vector filled by the
    embedding stage and every change announced so far applied too (the stored turn is
    complete, so what a test reads or compares next no longer changes)."""
    pos = client.last_position
    assert pos is not None
    await wait_processed(
        pipeline.endpoints.kafka_bootstrap,
        f"{pipeline.group_prefix}.{group}",
        pos.topic,
        pos.partition,
        pos.offset,
        timeout=60,
    )
    if group == "transcripts":
        stages = [("embeddings", topics.EMBEDDINGS), ("invalidation", topics.CHANGED)]
        await drained(pipeline.endpoints.kafka_bootstrap, pipeline.group_prefix, stages)


async def _changes_applied(pipeline: Pipeline) -> None:
    """Wait until the invalidation group has handled every change announced so far."""
    stages = [("invalidation", topics.CHANGED)]
    await drained(pipeline.endpoints.kafka_bootstrap, pipeline.group_prefix, stages)


async def _until(
    client: MemoryClient, query: str, scope: dict[str, Any], predicate: Any, timeout: float = 30
) -> ContextReply:
    deadline = time.monotonic() + timeout
    while True:
        reply = await client.context(query, scope)
        if predicate(reply) or time.monotonic() > deadline:
            return reply
        await asyncio.sleep(0.1)


async def test_later_pre_turn_sees_working_lines_and_other_tenants_see_nothing(
    pipeline: Pipeline, client: MemoryClient
) -> None:
    alice = {"agentWallet": "0xAgentOne", "userAddress": "alice", "threadId": "pets"}
    await client.record_turn(
        {
            **alice,
            "userMessage": "We adopted a greyhound called Juniper last spring.",
            "assistantMessage": "Juniper is a lovely name for a greyhound!",
        }
    )
    await _processed(client, pipeline)
    question = "What is the name of our greyhound?"
    reply = await _until(client, question, alice, lambda r: bool(r.items))
    _alive(pipeline)
    assert reply.prompt is not None
    assert "Juniper" in reply.prompt
    working = [item for item in reply.items if item.layer == "working"]
    assert working, reply.items
    assert working[0].text.splitlines()[0].startswith("assistant: Juniper")  # newest line first
    assert reply.totals["working"] == 1
    assert reply.totals["scene"] == 1
    assert reply.context_usage is not None
    assert reply.context_usage.characters == len(reply.prompt)

    for other in (
        {"agentWallet": "0xAgentOne", "userAddress": "bob", "threadId": "pets"},
        {"agentWallet": "0xAgentTwo", "userAddress": "alice", "threadId": "pets"},
        {"agentWallet": "0xAgentOne", "threadId": "pets"},  # no user: user-less rows only
    ):
        leak = await client.context(question, other)
        assert leak.prompt is None, other
        assert leak.items == [], other
        assert sum(leak.totals.values()) == 0, other


async def _snapshot(db: Any, user: str) -> dict[str, list[dict[str, Any]]]:
    """The user's documents (the groups also replay other tests' turns from the shared topic,
    so the rest of the database may still be changing)."""
    return {
        "session_transcripts": await stored_transcripts(db, {"userAddress": user}),
        **{
            name: await db[name].find({"userAddress": user}).sort("_id", 1).to_list(length=None)
            for name in ("sessions", "memory")
        },
    }


async def test_publishing_the_same_event_twice_leaves_identical_documents(
    pipeline: Pipeline, client: MemoryClient, db: Any
) -> None:
    body = {
        "agentWallet": "0xAgentOne",
        "userAddress": "dora",
        "threadId": "idem",
        "turnId": "turn-idem-1",
        "occurredAt": 1_780_000_000_000,
        "userMessage": "My sister Ana lives in Porto.",
        "assistantMessage": "Noted, Ana lives in Porto.",
        "toolEvents": [{"name": "calendar.lookup", "status": "completed", "result": "ok"}],
    }
    first = turn_recorded(body)
    await client.publish(topics.TURNS, first, first.session_id)
    await _processed(client, pipeline)
    before = await _snapshot(db, "dora")
    session = next(d for d in before["session_transcripts"] if d["sessionId"] == first.session_id)
    assert sorted(m["role"] for m in session["messages"]) == ["assistant", "tool", "user"]
    stamps = [m["timestamp"] for m in session["messages"]]
    assert stamps == sorted(stamps)
    assert session["createdAt"] == 1_780_000_000_000  # event time, not wall time

    again = turn_recorded(body)  # same turn, a new event id: a redelivery or a replay
    assert again.event_id != first.event_id
    assert again.turn_id == first.turn_id
    await client.publish(topics.TURNS, again, again.session_id)
    await _processed(client, pipeline)
    assert await _snapshot(db, "dora") == before


async def test_cached_query_misses_after_a_write_to_its_scope_and_hits_for_another(
    pipeline: Pipeline, client: MemoryClient
) -> None:
    erin = {"agentWallet": "0xCacheAgent", "userAddress": "erin", "threadId": "cook"}
    other = {"agentWallet": "0xOtherAgent", "userAddress": "erin", "threadId": "cook"}
    for scope in (erin, other):
        await client.record_turn(
            {
                **scope,
                "userMessage": "I bake sourdough bread on Sundays.",
                "assistantMessage": "Sourdough Sundays sound great.",
            }
        )
        await _processed(client, pipeline)
    # each write announces a change on another topic: until the invalidation group has
    # handled both, a cached answer may still be dropped by a late namespace bump
    await _changes_applied(pipeline)
    question = "When do I bake sourdough bread?"
    for scope in (erin, other):
        await _until(client, question, scope, lambda r: bool(r.items))
        assert (await client.context(question, scope)).cached is True

    await client.record_turn(
        {
            **erin,
            "userMessage": "I switched to baking rye bread on Sundays.",
            "assistantMessage": "Rye bread on Sundays, got it.",
        }
    )
    await _processed(client, pipeline)
    fresh = await _until(
        client, question, erin, lambda r: not r.cached and "rye" in (r.prompt or "").lower()
    )
    assert fresh.cached is False
    assert "rye" in (fresh.prompt or "").lower()
    still = await client.context(question, other)
    assert still.cached is True
    assert "rye" not in (still.prompt or "").lower()


async def test_invalid_event_goes_to_the_dead_letter_topic_and_the_partition_moves_on(
    pipeline: Pipeline, client: MemoryClient
) -> None:
    producer = client._require_producer()
    key = b"session:global:0xAgentOne:poison"
    meta = await producer.send_and_wait(topics.TURNS, b'{"not": "a turn"}', key=key)
    good = {
        "agentWallet": "0xAgentOne",
        "userAddress": "fay",
        "sessionId": key.decode(),
        "userMessage": "Remember the blue umbrella.",
        "assistantMessage": "Blue umbrella.",
    }
    await client.record_turn(good)
    assert client.last_position is not None
    assert client.last_position.partition == meta.partition
    await _processed(client, pipeline)
    reply = await _until(
        client,
        "blue umbrella",
        {"agentWallet": "0xAgentOne", "userAddress": "fay"},
        lambda r: bool(r.items),
    )
    assert reply.prompt is not None
    assert "umbrella" in reply.prompt

    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topics.DLQ,
        bootstrap_servers=pipeline.endpoints.kafka_bootstrap,
        auto_offset_reset="earliest",
        group_id=None,
    )
    await consumer.start()
    try:
        letters = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not letters:
            batch = await consumer.getmany(timeout_ms=500)
            letters = [
                r
                for rs in batch.values()
                for r in rs
                if b'"offset":%d' % meta.offset in (r.value or b"")
                and pipeline.group_prefix.encode() in (r.value or b"")
            ]
    finally:
        await consumer.stop()
    assert letters, "the poison message was not dead-lettered"
    body = letters[0].value or b""
    assert b'"error_type":"ValidationError"' in body
    assert b'"source_topic":"memory.turns.v1"' in body


async def test_remembered_fact_is_deduplicated_and_recalled_from_another_thread(
    pipeline: Pipeline, client: MemoryClient, db: Any
) -> None:
    gus = {"agentWallet": "0xAgentOne", "userAddress": "gus", "threadId": "t-remember"}
    for content in ("Gus is allergic to peanuts.", "  gus is allergic to PEANUTS.  "):
        await client.remember({**gus, "content": content, "type": "identity"})
        await _processed(client, pipeline, "facts.remember")
    rows = await db["memory"].find({"userAddress": "gus", "source": "fact"}).to_list(length=None)
    assert len(rows) == 1  # the reference inserted one row per remember (§16.13)
    assert rows[0]["metadata"]["factType"] == "identity"
    assert rows[0]["embeddingModel"] == "all-MiniLM-L6-v2-int8"
    assert rows[0]["embeddingDim"] == 384

    elsewhere = {**gus, "threadId": "another-thread"}
    reply = await _until(
        client,
        "Does Gus have any food allergies?",
        elsewhere,
        lambda r: "peanuts" in (r.prompt or ""),
    )
    assert reply.prompt is not None
    assert "peanuts" in reply.prompt
    assert any(item.layer in ("graph", "vectors") and item.source == "fact" for item in reply.items)
