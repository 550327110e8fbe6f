"""The embedded local infrastructure against the real servers (Tansu, SecantusDB, redis-server)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from pymongo import AsyncMongoClient
from redis.asyncio import Redis
from typer.testing import CliRunner

from services.ops.infra import (
    ENV_KAFKA,
    ENV_MONGO,
    ENV_REDIS,
    Endpoints,
    infra_app,
    read_endpoints,
    running_stack,
    stack_status,
    start_stack,
    stop_stack,
)
from services.stream.topics import create_topics

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _mnemostream(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_stack_of_infra_up_is_found_from_any_directory(tmp_path: Path) -> None:
    """`infra up` records the stack in the per-user state directory (here a temporary
    XDG_STATE_HOME, never the user's), so commands run elsewhere find it: `infra env`, a
    command reading `Settings` (`topics create`), the gateway, and `infra down`."""
    cwd = {name: tmp_path / name for name in ("up", "elsewhere", "down")}
    for path in cwd.values():
        path.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MNEMOSTREAM_STATE_DIR", ENV_KAFKA, ENV_MONGO, ENV_REDIS)
    }
    env |= {"XDG_STATE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    state = tmp_path / "xdg" / "mnemostream"
    try:
        up = _mnemostream("infra", "up", cwd=cwd["up"], env=env)
        assert up.returncode == 0, up.stderr
        assert set(_recorded_pids(state)) == {"kafka", "mongo", "redis"}
        assert not (cwd["up"] / ".mnemostream").exists()

        out = _mnemostream("infra", "env", cwd=cwd["elsewhere"], env=env)
        assert out.returncode == 0, out.stderr
        kafka = read_endpoints(state)
        assert kafka is not None
        assert f"export {ENV_KAFKA}={kafka.kafka_bootstrap}" in out.stdout

        topics_created = _mnemostream("topics", "create", cwd=cwd["elsewhere"], env=env)
        assert topics_created.returncode == 0, topics_created.stderr
        assert "memory.turns.v1: 8 partitions" in topics_created.stdout

        _gateway_becomes_ready(cwd["elsewhere"], env)

        down = _mnemostream("infra", "down", cwd=cwd["down"], env=env)
        assert down.returncode == 0, down.stderr
        assert down.stdout.count("stopped ") == 3, down.stdout
    finally:
        stop_stack(state)  # a no-op after `infra down`


def _gateway_becomes_ready(cwd: Path, env: dict[str, str]) -> None:
    """`mnemostream gateway` with no Kafka setting: ready only once it reached the recorded
    broker (`/readyz` asks it for metadata)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "services", "gateway", "--port", str(port)],
        cwd=cwd,
        env={**env, "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS": "state-dir-test-key"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the gateway did not become ready"
            time.sleep(0.2)
        assert httpx.get(f"http://127.0.0.1:{port}/livez", timeout=2).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
