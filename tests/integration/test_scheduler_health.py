"""The scheduler's `/livez`, `/readyz` and `/metrics` over real HTTP, against the session's
real stack. In-process (`serve_scheduler`) it becomes ready, publishes the hourly decay job
on its first tick and counts it (a fresh database has no agents, so no per-agent job is due,
and a held `cleanup` record keeps the daily cleanup from being published); with no broker it
stays unready and says why; and `mnemostream schedule` serves the same endpoints and stops
on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pymongo import AsyncMongoClient

from engine.upkeep.jobs import JobRecord
from schemas import topics
from services.endpoints import Endpoints
from services.ops.scheduler import serve_scheduler
from services.runtime import open_runtime
from services.settings import Settings
from tests.support.net import free_port
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

PUBLISHED = "mnemostream_scheduler_jobs_published_total"
LAST_FIRE = "mnemostream_scheduler_last_fire_timestamp_seconds"
LIGHT: dict[str, Any] = {"embedder": "hashing", "extractor": "none"}
"""The scheduler embeds nothing: no model to load."""


def sample(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def get(http: httpx.AsyncClient, path: str) -> httpx.Response | None:
    """The answer, or None while nothing listens yet."""
    try:
        return await http.get(path)
    except httpx.TransportError:
        return None


async def hold_cleanup(settings: Settings) -> None:
    """Record a running `cleanup` job in the scheduler's database, so it skips the daily
    cleanup: a published one would be run by any jobs group on the shared topic, across
    every tenant of that group's database (the same trick as tests/integration/test_jobs.py)."""
    async with open_runtime(settings) as rt:
        now_ms = int(time.time() * 1000)
        await rt.jobs.start(JobRecord(f"held-{uuid.uuid4().hex}", "cleanup", "running", now_ms))


def hour_of(moment: datetime) -> float:
    return moment.replace(minute=0, second=0, microsecond=0).timestamp()


@asynccontextmanager
async def scheduling(settings: Settings, mongo_uri: str) -> AsyncIterator[httpx.AsyncClient]:
    """`serve_scheduler` as a task (cancelled on exit, its database dropped), and an HTTP
    client for its endpoints."""
    task = asyncio.create_task(serve_scheduler(settings, every_seconds=0.2))
    url = f"http://127.0.0.1:{settings.http_port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            yield http
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_uri)
        await mongo.drop_database(settings.mongo.db)
        await mongo.close()


async def test_the_scheduler_becomes_ready_and_counts_the_jobs_it_publishes(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    settings = make_settings(stack, unique("sched"), http_port=free_port(), **LIGHT)
    await hold_cleanup(settings)
    started = datetime.now(UTC)
    async with scheduling(settings, stack.mongo_uri) as http:

        async def ready() -> bool:
            answer = await get(http, "/readyz")
            if answer is not None and answer.status_code == 503:
                assert answer.json()["status"] == "unready"
                assert answer.json()["missing"]
            return answer is not None and answer.status_code == 200

        await until(ready, "the scheduler to be ready")
        assert (await http.get("/readyz")).json() == {"status": "ready", "missing": []}
        assert (await http.get("/livez")).json() == {"status": "alive"}

        async def published() -> bool:
            text = (await http.get("/metrics")).text
            return (sample(text, PUBLISHED, type="decay_update") or 0) >= 1

        await until(published, "the hourly decay job to be counted")
        text = (await http.get("/metrics")).text
        # the latest firing of the hourly schedule: the top of this hour (or of the next, if
        # the clock crossed it meanwhile)
        fired = sample(text, LAST_FIRE, type="decay_update")
        assert fired in {hour_of(started), hour_of(datetime.now(UTC))}
        # later ticks see no new firing in the same hour: counted once
        await asyncio.sleep(0.6)
        again = (await http.get("/metrics")).text
        if hour_of(datetime.now(UTC)) == hour_of(started):
            assert sample(again, PUBLISHED, type="decay_update") == 1
        assert sample(again, PUBLISHED, type="cleanup") is None  # held: skipped


async def test_without_a_broker_the_scheduler_is_live_but_not_ready(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    settings = make_settings(stack, unique("sched"), http_port=free_port(), **LIGHT)
    settings = settings.with_values(kafka_bootstrap=nowhere)
    async with scheduling(settings, stack.mongo_uri) as http:
        expected = [f"Kafka client not started ({topics.JOBS} not created or seen yet)"]

        async def schema_ensured() -> bool:
            answer = await get(http, "/readyz")
            return answer is not None and answer.json()["missing"] == expected

        await until(schema_ensured, "the database schema (and only it) to be ready")
        unready = await http.get("/readyz")
        assert unready.status_code == 503
        assert unready.json() == {"status": "unready", "missing": expected}
        assert (await http.get("/livez")).status_code == 200
        assert sample((await http.get("/metrics")).text, PUBLISHED, type="decay_update") is None


async def test_schedule_serves_health_and_metrics_and_stops_on_sigterm(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    db = unique("sched-cli")
    port = free_port()
    await hold_cleanup(make_settings(stack, db, **LIGHT))
    env = {
        **os.environ,
        **stack.to_env(),
        "MNEMOSTREAM_MONGO_DB": db,
        "MNEMOSTREAM_EMBEDDER": "hashing",
        "MNEMOSTREAM_EXTRACTOR": "none",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "services", "schedule", "--every", "0.5", "--http-port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:

            async def counted() -> bool:
                assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")
                ready = await get(http, "/readyz")
                if ready is None or ready.status_code != 200:
                    return False
                text = (await http.get("/metrics")).text
                return (sample(text, PUBLISHED, type="decay_update") or 0) >= 1

            await until(counted, "`schedule` to be ready and count its first job")
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, output.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongo_uri)
        await mongo.drop_database(db)
        await mongo.close()
