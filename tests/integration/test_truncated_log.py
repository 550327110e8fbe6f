"""A log whose head is gone, on a real broker (issue 31): the replay rebuilds what is left and
says what it cannot rebuild, and `replay --verify` does not call the rebuild equal.

The session's broker cannot lose records (no retention, no DeleteRecords), so this test runs
the same broker on its S3 engine over a local S3 server and drops the partition's first
batches there, as retention drops the oldest segments (`tests/support/s3_broker.py`). On a
broker of its own, a group started on a source topic with a finite retention warns."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from schemas.bodies import parse_body
from schemas.turn_input import TurnInput
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.ops.log_reach import log_reach
from services.ops.replay import SOURCE_TOPICS, replay
from services.ops.replay_view import run_replay
from services.stream.topics import create_topics
from tests.support.s3_broker import S3Broker, s3_broker
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

TURNS = 5
DROPPED = 2


def turn(agent: str, n: int) -> TurnInput:
    return parse_body(
        TurnInput,
        {
            "agentWallet": agent,
            "userAddress": "alice",
            "threadId": "lisbon",
            "turnId": f"turn-{n}",
            "userMessage": f"Note {n}: the ferry to Cacilhas leaves at {n + 8}:15.",
            "assistantMessage": f"Noted {n}.",
        },
    )


async def publish_one_batch_each(bootstrap: str, agent: str) -> int:
    """The turns of one thread, each sent and awaited alone (a batch, so an object, each):
    the partition they went to."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        partitions = set()
        for n in range(TURNS):
            event = turn(agent, n).recorded()
            meta = await producer.send_and_wait(
                topics.TURNS,
                event.model_dump_json().encode(),
                key=event.session_id.encode(),
                headers=[("content-type", b"application/json")],
            )
            assert meta.offset == n  # a new broker: the thread's partition holds only these
            partitions.add(meta.partition)
    finally:
        await producer.stop()
    [partition] = partitions
    return partition


@pytest.fixture
def broker(tmp_path: Path) -> S3Broker:
    with s3_broker(tmp_path) as running:
        yield running  # type: ignore[misc]


async def test_a_log_that_lost_its_head_is_rebuilt_in_part_and_said_so(
    broker: S3Broker,
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Callable[[str], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = f"0xhead{uuid.uuid4().hex[:10]}"
    live, rebuilt = unique("headlive"), unique("headgone")
    endpoints = Endpoints(
        kafka_bootstrap=broker.bootstrap, mongo_uri=stack.mongo_uri, redis_url=stack.redis_url
    )
    settings = make_settings(endpoints, live, group_prefix=unique("head"), extractor="none")
    await create_topics(broker.bootstrap, topics.partitions(settings.kafka.partitions))
    partition = await publish_one_batch_each(broker.bootstrap, agent)

    whole = await log_reach(broker.bootstrap, SOURCE_TOPICS)
    assert whole[(topics.TURNS, partition)].first == 0

    broker.drop_head(topics.TURNS, partition, DROPPED)
    reach = await log_reach(broker.bootstrap, SOURCE_TOPICS)
    assert reach[(topics.TURNS, partition)].first == DROPPED
    assert reach[(topics.TURNS, partition)].end == TURNS

    from pymongo import AsyncMongoClient

    mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(stack.mongo_uri)
    try:
        report = await replay(settings, rebuilt, fresh=True, agents=[agent], embedder=minilm)
        # what is left is rebuilt, what is gone is named, and nothing claims the whole
        stored = mongo[rebuilt]["transcript_turns"]
        turn_ids = {d["turnId"] async for d in stored.find({"agentWallet": agent})}
        assert turn_ids == {f"turn-{n}" for n in range(DROPPED, TURNS)}
        assert report.truncated == (
            f"{topics.TURNS} partition {partition} starts at offset {DROPPED}: its first "
            f"{DROPPED} records are gone from the log and cannot be rebuilt",
        )
        assert report.gaps

        # the operator's command says so and does not verify
        ok = await asyncio.to_thread(
            run_replay, settings, unique("headverify"), fresh=True, agents=[agent], verify=True
        )
        out = " ".join(capsys.readouterr().out.split())
        assert ok is False
        assert f"{topics.TURNS} partition {partition} starts at offset {DROPPED}" in out
        assert "not verifiable: the log no longer holds all of memory (1 source partitions" in out
    finally:
        for db in await mongo.list_database_names():
            if db.startswith(("headlive_", "headgone_", "headverify_")):
                await mongo.drop_database(db)
        await mongo.close()


async def test_a_group_started_on_a_source_topic_that_drops_records_says_so(
    broker: S3Broker,
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The start-up check's wiring: a broker of its own, whose topics the group creates with
    a one-hour retention of the sources (a deployment that chose so, or a broker's default):
    the transcripts group warns, naming the topic it reads and what a replay loses."""
    endpoints = Endpoints(
        kafka_bootstrap=broker.bootstrap, mongo_uri=stack.mongo_uri, redis_url=stack.redis_url
    )
    settings = make_settings(
        endpoints,
        unique("hourlog"),
        group_prefix=unique("hour"),
        extractor="none",
        source_retention_ms=3_600_000,
    )
    caplog.set_level(logging.WARNING, logger="services.stream.retention")
    from pymongo import AsyncMongoClient

    try:
        async with running_groups(settings, ["transcripts"], embedder=minilm, broker_logs=False):
            pass
    finally:
        mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(stack.mongo_uri)
        await mongo.drop_database(settings.mongo.db)
        await mongo.close()
    warned = [r.getMessage() for r in caplog.records if r.name == "services.stream.retention"]
    assert warned == [
        f"source topic {topics.TURNS} keeps records for 3600000 ms: a replay rebuilds only "
        "what it still holds (set retention.ms=-1 on it; docs/operations.md#keeping-the-log)"
    ]
