"""Metrics and health of one group process, scraped over real HTTP while it drains a backlog.

The turns topic is shared by every test and a fresh group reads it from `earliest`, so the
backlog holds other tests' turns too. What is asserted is what this test controls: the lag of
its own (uniquely named) group reaching exactly 0, counters of that group growing by at least
the turns published here, and the DLQ counter growing by exactly the poison messages published
while the group runs (measured as a delta on this group's label set, between two drained
states).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pymongo import AsyncMongoClient

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.sdk.client import MemoryClient
from tests.support.net import free_port
from tests.support.pipeline import subscriptions
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

TURNS = 12
POISON = 2
GROUPS = ["patterns", "search"]


def samples(text: str, name: str, **labels: str) -> list[float]:
    """Values of the samples called `name` whose labels include `labels`."""
    return [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    ]


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 180) -> None:
    """Poll `check`. The timeout is generous: a fresh group drains the whole shared turns
    topic, which on a long-lived dev stack holds every earlier test's turns."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_a_group_reports_lag_counters_dead_letters_and_readiness(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str]
) -> None:
    agent = unique("0xMetrics")
    async with MemoryClient(stack.kafka_bootstrap) as client:
        for i in range(TURNS):
            await client.record_turn(
                {
                    "agentWallet": agent,
                    "userAddress": "mia",
                    "threadId": f"t{i % 3}",
                    "userMessage": f"Turn {i}: the backlog grows.",
                    "assistantMessage": "Noted.",
                }
            )

        prefix = unique("metrics")
        port = free_port()
        # patterns: a cheap group on the turns topic (turns without tools write nothing);
        # search: answers context requests (the cache counter)
        group = f"{prefix}.patterns"
        config = make_settings(
            stack,
            prefix,
            group_prefix=prefix,
            session_timeout_ms=2000,
            heartbeat_interval_ms=500,
            extractor="none",
            http_port=port,
            lag_interval_seconds=0.2,
        )
        leave = asyncio.Event()

        async def run() -> None:
            async with running_groups(config, GROUPS, embedder=minilm, broker_logs=False) as rt:
                await leave.wait()
                await rt.mongo.drop_database(config.mongo.db)

        task = asyncio.create_task(run())
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:

                async def scrape() -> str:
                    response = await http.get("/metrics")
                    assert response.status_code == 200
                    assert response.headers["content-type"].startswith("text/plain")
                    return response.text

                async def serving() -> bool:
                    assert not task.done(), task.exception()
                    try:
                        return (await http.get("/livez")).status_code == 200
                    except httpx.TransportError:
                        return False

                await until(serving, "the health server")

                # 503 until the schema is ensured and every subscriber holds partitions, always
                # naming what is missing (which pieces a poll sees depends on its timing)
                def explained(body: dict[str, Any]) -> bool:
                    return body["status"] == "unready" and all(
                        m.startswith(("database schema", "consumer groups", f"{prefix}."))
                        for m in body["missing"]
                    )

                first = await http.get("/readyz")
                assert first.status_code == 503
                assert first.json()["missing"]
                assert explained(first.json())
                seen = {"lag": 0.0}

                async def ready() -> bool:
                    lag = samples(await scrape(), "mnemostream_consumer_lag", group=group)
                    seen["lag"] = max(seen["lag"], sum(lag))
                    response = await http.get("/readyz")
                    assert response.status_code == 200 or explained(response.json())
                    return response.status_code == 200

                await until(ready, "/readyz to turn 200")
                assert (await http.get("/readyz")).json() == {"status": "ready", "missing": []}
                # the lag was read before the group joined: at least this test's backlog
                assert seen["lag"] >= TURNS

                async def drained() -> bool:
                    """Every partition of every group of this process is committed."""
                    text = await scrape()
                    lag = {
                        (s.labels["group"], s.labels["topic"], s.labels["partition"]): s.value
                        for family in text_string_to_metric_families(text)
                        for s in family.samples
                        if s.name == "mnemostream_consumer_lag"
                    }
                    turns = [v for (g, t, _), v in lag.items() if (g, t) == (group, topics.TURNS)]
                    # every Kafka group id of the process's subscribers (from the AsyncAPI list)
                    assert {g for g, _, _ in lag} == {g for g, _ in subscriptions(prefix, GROUPS)}
                    return bool(turns) and all(v == 0 for v in lag.values())

                await until(drained, "the backlog to drain")
                text = await scrape()
                processed = samples(
                    text, "mnemostream_events_processed_total", group=group, topic=topics.TURNS
                )
                assert sum(processed) >= TURNS
                assert samples(text, "mnemostream_handler_duration_seconds_count", group=group)
                received = samples(
                    text,
                    "faststream_received_messages_total",
                    app_name="mnemostream",
                    handler=topics.TURNS,
                )
                assert sum(received) >= TURNS

                dlq_labels = {
                    "group": group,
                    "topic": topics.TURNS,
                    "error_type": "ValidationError",
                }
                before = sum(samples(text, "mnemostream_dead_letters_total", **dlq_labels))
                producer = client._require_producer()
                for i in range(POISON):
                    await producer.send_and_wait(
                        topics.TURNS, b'{"not": "a turn"}', key=f"{agent}:poison:{i}".encode()
                    )

                async def dead_lettered() -> bool:
                    now = samples(await scrape(), "mnemostream_dead_letters_total", **dlq_labels)
                    return sum(now) - before >= POISON

                await until(dead_lettered, "the poison messages to be dead-lettered")
                await asyncio.sleep(3 * config.lag_interval_seconds)  # a refresh after them
                await until(drained, "the poison messages to be committed")
                text = await scrape()
                after = sum(samples(text, "mnemostream_dead_letters_total", **dlq_labels))
                assert after - before == POISON
                failures = samples(text, "mnemostream_event_failures_total", **dlq_labels)
                assert sum(failures) >= after

                # the context cache: a fresh tenant misses, the same question again hits
                def cache(text: str, result: str) -> float:
                    return sum(
                        samples(
                            text,
                            "mnemostream_cache_requests_total",
                            request="context",
                            result=result,
                        )
                    )

                scope = {"agentWallet": agent, "userAddress": "mia"}
                misses, hits = cache(text, "miss"), cache(text, "hit")
                cold = await client.context("What grows?", scope)
                warm = await client.context("What grows?", scope)
                assert (cold.error, cold.cached) == (None, False)
                assert (warm.error, warm.cached) == (None, True)
                text = await scrape()
                assert (cache(text, "miss") - misses, cache(text, "hit") - hits) == (1, 1)
                assert (await http.get("/livez")).json() == {"status": "alive"}
        finally:
            leave.set()
            await asyncio.wait_for(task, 60)

    # the server stops with the groups
    with pytest.raises(httpx.TransportError):
        async with httpx.AsyncClient(timeout=2) as http:
            await http.get(f"http://127.0.0.1:{port}/livez")


async def test_run_serves_health_and_metrics_and_stops_on_sigterm(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    prefix = unique("metrics-cli")
    port = free_port()
    env = {
        **os.environ,
        **stack.to_env(),
        "MNEMOSTREAM_MONGO_DB": prefix,
        "MNEMOSTREAM_GROUP_PREFIX": prefix,
        "MNEMOSTREAM_SESSION_TIMEOUT_MS": "2000",
        "MNEMOSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "MNEMOSTREAM_EMBEDDER": "hashing",
        "MNEMOSTREAM_EXTRACTOR": "none",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "services", "run", "patterns", "--http-port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:

            async def ready() -> bool:
                assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")
                try:
                    return (await http.get("/readyz")).status_code == 200
                except httpx.TransportError:
                    return False

            await until(ready, "`run` to be ready", timeout=60)
            text = (await http.get("/metrics")).text
            assert samples(text, "mnemostream_consumer_lag", group=f"{prefix}.patterns")
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, output.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongo_uri)
        await mongo.drop_database(prefix)
        await mongo.close()
