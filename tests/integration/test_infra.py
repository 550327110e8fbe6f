"""The embedded local infrastructure against the real servers (Tansu, SecantusDB, redis-server)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from pymongo import AsyncMongoClient
from redis.asyncio import Redis
from typer.testing import CliRunner

from services.infra import (
    ENV_KAFKA,
    ENV_MONGO,
    ENV_REDIS,
    Endpoints,
    create_topics,
    infra_app,
    running_stack,
    stack_status,
    start_stack,
    stop_stack,
)

pytestmark = pytest.mark.integration


def _recorded_pids(state_dir: Path) -> dict[str, int]:
    raw = json.loads((state_dir / "infra.json").read_text())
    return {
        name: svc["pid"] for name, svc in raw["services"].items() if svc["managed"] and svc["pid"]
    }


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_explicit_topic_has_its_partition_count(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    topic = unique("infra-topic")
    await create_topics(stack.kafka_bootstrap, {topic: 3})
    await create_topics(stack.kafka_bootstrap, {topic: 3})  # already exists: no error

    admin = AIOKafkaAdminClient(bootstrap_servers=stack.kafka_bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    assert [t["topic"] for t in described] == [topic]
    assert sorted(p["partition"] for p in described[0]["partitions"]) == [0, 1, 2]

    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap)
    await producer.start()
    try:
        assert await producer.partitions_for(topic) == {0, 1, 2}
    finally:
        await producer.stop()


async def test_kafka_produce_consume_round_trip(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    topic, group = unique("infra-rt"), unique("infra-group")
    await create_topics(stack.kafka_bootstrap, {topic: 3})

    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap)
    await producer.start()
    try:
        sent = await producer.send_and_wait(topic, b"hello", key=b"session-1")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=stack.kafka_bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
    )
    await consumer.start()
    try:
        msg = await asyncio.wait_for(consumer.getone(), timeout=20)
    finally:
        await consumer.stop()
    assert (msg.key, msg.value) == (b"session-1", b"hello")
    assert (msg.partition, msg.offset) == (sent.partition, sent.offset)


async def test_mongo_insert_find_round_trip(stack: Endpoints, unique: Callable[[str], str]) -> None:
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        stack.mongo_uri, serverSelectionTimeoutMS=10_000
    )
    db_name = unique("infra_db")
    try:
        coll = client[db_name]["notes"]
        await coll.insert_one({"_id": "n1", "text": "remember this", "n": 1})
        found = await coll.find_one({"_id": "n1"})
        assert found == {"_id": "n1", "text": "remember this", "n": 1}
    finally:
        await client.drop_database(db_name)
        await client.close()


async def test_redis_set_get(stack: Endpoints, unique: Callable[[str], str]) -> None:
    client = Redis.from_url(stack.redis_url)
    key = unique("infra:key")
    try:
        await client.set(key, b"value", ex=60)
        assert await client.get(key) == b"value"
    finally:
        await client.delete(key)
        await client.aclose()


def test_start_then_stop_terminates_the_pids(tmp_path: Path) -> None:
    endpoints = start_stack(tmp_path)
    pids = _recorded_pids(tmp_path)
    assert set(pids) == {"kafka", "mongo", "redis"}
    assert endpoints.mongo_uri.endswith("/?retryWrites=false")
    status = stack_status(tmp_path)
    assert all(s["alive"] and s["ready"] for s in status.values()), status

    stopped = stop_stack(tmp_path)

    assert sorted(stopped) == sorted(f"{n} (pid {p})" for n, p in pids.items())
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (tmp_path / "infra.json").exists()
    assert stop_stack(tmp_path) == []  # nothing left: idempotent


def test_given_urls_are_not_started_and_dead_pids_are_tolerated(
    stack: Endpoints, tmp_path: Path
) -> None:
    with running_stack(tmp_path, kafka=stack.kafka_bootstrap, mongo=stack.mongo_uri) as endpoints:
        assert (endpoints.kafka_bootstrap, endpoints.mongo_uri) == (
            stack.kafka_bootstrap,
            stack.mongo_uri,
        )
        assert endpoints.redis_url != stack.redis_url
        pids = _recorded_pids(tmp_path)
        assert set(pids) == {"redis"}
        status = stack_status(tmp_path)
        assert status["kafka"]["managed"] is False
        assert status["kafka"]["alive"] is None
        assert status["kafka"]["ready"] is True
        # The server dies behind our back (we started it: its recorded PID is ours to signal).
        os.kill(pids["redis"], signal.SIGKILL)
    assert not (tmp_path / "infra.json").exists()
    assert _gone(pids["redis"])


def test_cli_up_status_env_down(stack: Endpoints, tmp_path: Path) -> None:
    runner = CliRunner()
    state = ["--state-dir", str(tmp_path)]
    # Mongo and Redis come from the environment (not started); Kafka is unset, so it is started.
    env = {ENV_MONGO: stack.mongo_uri, ENV_REDIS: stack.redis_url, ENV_KAFKA: None}

    up = runner.invoke(infra_app, ["up", *state], env=env)
    assert up.exit_code == 0, up.output
    assert f"{ENV_MONGO}={stack.mongo_uri}" in up.output
    pids = _recorded_pids(tmp_path)
    assert set(pids) == {"kafka"}

    status = runner.invoke(infra_app, ["status", *state])
    assert status.exit_code == 0, status.output
    assert "kafka" in status.output

    out = runner.invoke(infra_app, ["env", *state])
    assert out.exit_code == 0, out.output
    exported = dict(
        line.removeprefix("export ").split("=", 1)
        for line in out.output.splitlines()
        if line.startswith("export ")
    )
    assert exported[ENV_MONGO] == f"'{stack.mongo_uri}'"  # shell-quoted: the URI holds '?'
    assert exported[ENV_REDIS] == stack.redis_url
    assert exported[ENV_KAFKA].startswith("127.0.0.1:")

    down = runner.invoke(infra_app, ["down", *state])
    assert down.exit_code == 0, down.output
    assert f"kafka (pid {pids['kafka']})" in down.output
    assert _gone(pids["kafka"])
