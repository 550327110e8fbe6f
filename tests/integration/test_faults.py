"""Faults on the real stack, with exact figures: every turn published is stored exactly once.

* a consumer process SIGKILLed mid-batch, then restarted: each turn once, each thread in order;
* the MongoDB-wire server stopped for `MONGO_OUTAGE_SECONDS` during ingest, then restarted;
* Redis stopped: pre_turn still answers, writes go on, caches work again once it is back;
* the broker restarted (the local broker keeps nothing): the stored memory survives, new
  turns flow again, and replaying a fresh log rebuilds the same documents.

Servers a test stops are its own (`services.ops.stack.Server`), never the session's; processes
are stopped by PID.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.ops.replay import replay
from services.ops.stack import Server
from services.ops.verify import compare
from services.sdk.client import MemoryClient
from services.stream.dead_letters import read_letters
from services.stream.offsets import end_offsets, start_at_end, wait_caught_up
from tests.support.mongo import stored_transcripts
from tests.support.pipeline import groups_running, subscriptions
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

MONGO_OUTAGE_SECONDS = float(os.environ.get("FAULT_MONGO_OUTAGE_SECONDS", "30"))
KILL_TURNS = 2000
THREADS = 20


def turn(agent: str, n: int, base_ms: int) -> dict[str, Any]:
    """Turn `n` of the agent, said `n` seconds after `base_ms`."""
    return {
        "agentWallet": agent,
        "userAddress": f"user{n % 4}",
        "threadId": f"thread{n % THREADS}",
        "turnId": f"{agent}-turn-{n}",
        "userMessage": f"Message {n}: what about the museum on day {n}?",
        "assistantMessage": f"Reply {n}: it opens at nine.",
        "occurredAt": base_ms + n * 1000,  # the same turn published again is the same event
    }


def group_env(ends: Endpoints, db: str, prefix: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        **ends.to_env(),
        "MNEMOSTREAM_MONGO_DB": db,
        "MNEMOSTREAM_GROUP_PREFIX": prefix,
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "MNEMOSTREAM_EMBEDDER": "hashing",  # delivery is under test, not semantics
        "MNEMOSTREAM_HTTP_PORT": "0",
        **extra,
    }


class GroupProcess:
    """`python -m services run <group>` as an OS process, stopped or killed by PID."""

    def __init__(self, group: str, env: dict[str, str], log: Path) -> None:
        self.group, self.env, self.log = group, env, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "services", "run", self.group],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.starts += 1

    def kill(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@pytest.fixture
def base_ms(now_ms: int) -> int:
    """When turn 0 was said: a day before the test started."""
    return now_ms - 86_400_000


@pytest.fixture
def mongo_server(tmp_path: Path) -> Iterator[Server]:
    server = Server("mongo", tmp_path / "mongo")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kafka_server(tmp_path: Path) -> Iterator[Server]:
    """A broker of the test's own: the heavy fault tests depend on nothing that hundreds of
    earlier tests left in the session's broker (groups, topics, offsets)."""
    server = Server("kafka", tmp_path / "kafka")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def published_ends(
    client: MemoryClient, agent: str, turns: range, base_ms: int
) -> dict[Any, int]:
    """Publish the turns; {(topic, partition): next offset} after the last of each."""
    ends: dict[tuple[str, int], int] = {}
    for n in turns:
        await client.record_turn(turn(agent, n, base_ms))
        pos = client.last_position
        assert pos is not None
        ends[(pos.topic, pos.partition)] = max(
            ends.get((pos.topic, pos.partition), 0), pos.offset + 1
        )
    return ends


async def stored_once(db: AsyncDatabase[dict[str, Any]], agent: str, expected: int) -> None:
    """Every turn of `agent` is in its transcript exactly once, with one session vector."""
    per_turn: dict[str, int] = {}
    for doc in await stored_transcripts(db, {"agentWallet": agent}):
        for message in doc["messages"]:
            if message["role"] == "user":
                key = message["content"].split(":")[0]
                per_turn[key] = per_turn.get(key, 0) + 1
    lost = expected - len(per_turn)
    duplicated = sum(count - 1 for count in per_turn.values())
    vectors = await db["memory"].count_documents({"agentWallet": agent, "source": "session"})
    assert (lost, duplicated, vectors) == (0, 0, expected)


def _number(text: str) -> int:
    """n of "Message n: …" / "user: Message n: …" / a turn id ending in "-n"."""
    return int(text.replace("user: ", "").split(":")[0].split()[-1].split("-")[-1])


async def kept_in_order(db: AsyncDatabase[dict[str, Any]], agent: str, expected: int) -> None:
    """Each thread's transcript lists its turns in the order they were said, and its
    working buffer holds the newest lines, oldest first."""
    threads = 0
    for doc in await stored_transcripts(db, {"agentWallet": agent}):
        said = [_number(t) for t in doc["turnIds"]]
        assert said == sorted(said), f"{doc['_id']} stored its turns out of order"
        threads += 1
    assert threads == THREADS
    async for doc in db["sessions"].find({"agentWallet": agent}):
        lines = [_number(x) for x in doc["workingMemory"]["context"] if x.startswith("user:")]
        thread = int(doc["threadId"].removeprefix("thread"))
        newest = [n for n in range(expected) if n % THREADS == thread][-len(lines) :]
        assert lines == newest, f"{doc['_id']} working buffer is not the newest turns in order"


async def test_a_consumer_killed_mid_batch_stores_every_turn_exactly_once_after_restart(
    stack: Endpoints, kafka_server: Server, tmp_path: Path, base_ms: int
) -> None:
    ends_ = Endpoints(kafka_server.endpoint, stack.mongo_uri, stack.redis_url)
    agent = f"0xkill{uuid.uuid4().hex[:10]}"
    db_name, prefix = f"kill_{uuid.uuid4().hex[:8]}", f"kill-{uuid.uuid4().hex[:8]}"
    await start_at_end(ends_.kafka_bootstrap, subscriptions(prefix, ["transcripts"]))
    env = group_env(ends_, db_name, prefix, MNEMOSTREAM_BATCH_MAX_RECORDS="200")
    worker = GroupProcess("transcripts", env, tmp_path / "w.log")
    worker.start()
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongo_uri)
    db = mongo[db_name]
    try:
        async with MemoryClient(ends_.kafka_bootstrap, timeout=30) as client:
            publishing = asyncio.create_task(
                published_ends(client, agent, range(KILL_TURNS), base_ms)
            )
            deadline = time.monotonic() + 120
            while await db["memory"].count_documents({"agentWallet": agent}) < KILL_TURNS // 4:
                assert time.monotonic() < deadline, "the worker did not start storing turns"
                await asyncio.sleep(0.05)
            worker.kill(signal.SIGKILL)  # mid-batch: uncommitted turns are read again
            stored_at_kill = await db["memory"].count_documents({"agentWallet": agent})
            worker.start()
            ends = await publishing
        assert stored_at_kill < KILL_TURNS
        await wait_caught_up(ends_.kafka_bootstrap, f"{prefix}.transcripts", ends, timeout=240)
        await stored_once(db, agent, KILL_TURNS)
        await kept_in_order(db, agent, KILL_TURNS)
    finally:
        worker.kill(signal.SIGTERM)
        await mongo.drop_database(db_name)
        await mongo.close()


async def test_a_mongo_outage_is_waited_out_with_nothing_lost_or_dead_lettered(
    stack: Endpoints, mongo_server: Server, kafka_server: Server, tmp_path: Path, base_ms: int
) -> None:
    agent = f"0xoutage{uuid.uuid4().hex[:10]}"
    ends_ = Endpoints(kafka_server.endpoint, mongo_server.endpoint, stack.redis_url)
    db_name, prefix = f"outage_{uuid.uuid4().hex[:8]}", f"outage-{uuid.uuid4().hex[:8]}"
    await start_at_end(ends_.kafka_bootstrap, subscriptions(prefix, ["transcripts"]))
    env = group_env(ends_, db_name, prefix, MNEMOSTREAM_MAX_ATTEMPTS="2")
    worker = GroupProcess("transcripts", env, tmp_path / "w.log")
    worker.start()
    total, before, during = 300, 100, 100
    try:
        async with MemoryClient(ends_.kafka_bootstrap, timeout=30) as client:
            first = await published_ends(client, agent, range(before), base_ms)
            await wait_caught_up(ends_.kafka_bootstrap, f"{prefix}.transcripts", first, timeout=120)
            mongo_server.stop()
            began = time.monotonic()
            second = await published_ends(client, agent, range(before, before + during), base_ms)
            while time.monotonic() - began < MONGO_OUTAGE_SECONDS:
                assert worker.alive, "the worker crashed during the outage"
                await asyncio.sleep(0.5)
            mongo_server.start()
            third = await published_ends(client, agent, range(before + during, total), base_ms)
        ends = {
            k: max(first.get(k, 0), second.get(k, 0), third.get(k, 0))
            for k in {*first, *second, *third}
        }
        await wait_caught_up(ends_.kafka_bootstrap, f"{prefix}.transcripts", ends, timeout=180)
        assert worker.alive  # no crash loop
        assert worker.starts == 1
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_server.endpoint)
        try:
            await stored_once(mongo[db_name], agent, total)
        finally:
            await mongo.close()
        letters = await read_letters(ends_.kafka_bootstrap, group=f"{prefix}.transcripts")
        assert letters == []
    finally:
        worker.kill(signal.SIGTERM)


async def test_redis_down_pre_turn_answers_uncached_writes_go_on_and_caches_come_back(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, tmp_path: Path
) -> None:
    redis = Server("redis", tmp_path / "redis")
    redis.start()
    ends = Endpoints(stack.kafka_bootstrap, stack.mongo_uri, redis.endpoint)
    agent = f"0xredis{uuid.uuid4().hex[:10]}"
    scope = {"agentWallet": agent, "userAddress": "ivy"}
    groups = ["transcripts", "invalidation", "search"]
    try:
        async with groups_running(ends, minilm, "redis", groups) as (rt, client):

            async def recorded(text: str, *, settled: bool = True) -> None:
                await client.record_turn(
                    {**scope, "threadId": "t", "userMessage": text, "assistantMessage": "Noted."}
                )
                pos = client.last_position
                assert pos is not None
                await wait_caught_up(
                    stack.kafka_bootstrap,
                    rt.group_id("transcripts"),
                    {(pos.topic, pos.partition): pos.offset + 1},
                    timeout=60,
                )
                if not settled:  # Redis is down: the invalidation waits for it
                    return
                # the write's invalidation lands asynchronously: wait for it, or it could
                # bump the namespace between the two reads the test compares
                changed = await end_offsets(stack.kafka_bootstrap, [topics.CHANGED])
                await wait_caught_up(
                    stack.kafka_bootstrap, rt.group_id("invalidation"), changed, timeout=60
                )

            await recorded("The spare key is under the blue flowerpot.")
            first = await client.context("Where is the spare key?", scope)
            again = await client.context("Where is the spare key?", scope)
            assert "flowerpot" in (first.prompt or "")
            assert (first.cached, again.cached) == (False, True)

            redis.stop()
            await recorded("The garage code is 4417.", settled=False)  # writes go on
            answer = await client.context("What is the garage code?", scope)
            assert "4417" in (answer.prompt or "")
            assert answer.cached is False  # answered, uncached

            redis.start()  # empty: it keeps nothing
            deadline = time.monotonic() + 30
            while True:
                await client.context("What is the garage code?", scope)
                two = await client.context("What is the garage code?", scope)
                if two.cached or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert "4417" in (two.prompt or "")
            assert two.cached, "the cache did not come back"
            # (this read only the replay's source topics before, so the wait was vacuous)
            changed = await end_offsets(stack.kafka_bootstrap, [topics.CHANGED])
            assert changed, "no memory.changed.v1 partitions"
            await wait_caught_up(
                stack.kafka_bootstrap, rt.group_id("invalidation"), changed, timeout=60
            )
            letters = await read_letters(stack.kafka_bootstrap, group=rt.group_id("invalidation"))
            assert letters == []  # the invalidations waited for Redis instead
    finally:
        redis.stop()


async def test_a_broker_restart_keeps_memory_and_a_replayed_fresh_log_rebuilds_it(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, tmp_path: Path, base_ms: int
) -> None:
    broker = Server("kafka", tmp_path / "kafka")
    broker.start()
    ends = Endpoints(broker.endpoint, stack.mongo_uri, stack.redis_url)
    agent = f"0xbroker{uuid.uuid4().hex[:10]}"
    db_name = f"broker_{uuid.uuid4().hex[:8]}"
    settings = make_settings(
        ends,
        db_name,
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        group_prefix=f"broker-{uuid.uuid4().hex[:8]}",
        extractor="none",
        embedding_deferred=False,  # only the transcripts group runs: it embeds inline
    )
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongo_uri)
    try:
        async with (
            running_groups(settings, ["transcripts"], embedder=minilm, broker_logs=False) as rt,
            MemoryClient(broker.endpoint, timeout=15) as client,
        ):
            first = await published_ends(client, agent, range(40), base_ms)
            await wait_caught_up(broker.endpoint, rt.group_id("transcripts"), first, timeout=60)
        await stored_once(mongo[db_name], agent, 40)

        broker.stop()  # the local broker keeps nothing: topics, offsets and log are gone
        broker.start()
        await stored_once(mongo[db_name], agent, 40)  # memory lives in MongoDB
        async with (
            running_groups(settings, ["transcripts"], embedder=minilm, broker_logs=False) as rt,
            MemoryClient(broker.endpoint, timeout=15) as client,
        ):
            # the producers' log is gone: publish it again (an agent runtime would resend
            # from its outbox); turn ids make the rerun idempotent, and new turns flow
            again = await published_ends(client, agent, range(60), base_ms)
            await wait_caught_up(broker.endpoint, rt.group_id("transcripts"), again, timeout=60)
        await stored_once(mongo[db_name], agent, 60)

        rebuilt = f"{db_name}_rebuilt"
        report = await replay(settings, rebuilt, agents=[agent], embedder=minilm)
        assert report.records >= 60
        checked = await compare(settings, db_name, rebuilt, agents=[agent])
        assert checked.equal, [(c.name, c.missing, c.extra, c.changed) for c in checked.collections]
        await mongo.drop_database(rebuilt)
    finally:
        await mongo.drop_database(db_name)
        await mongo.close()
        broker.stop()
