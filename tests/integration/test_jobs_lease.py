"""Jobs that can no longer stay `running` forever (§16.18) on the real stack: an absurd
parameter fails the job instead of crashing it, the job store renews and abandons records as
its contract says, and a record past its lease stops blocking its schedule."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from aiokafka import AIOKafkaConsumer

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import InMemoryJobStore
from engine.adapters.mongo import MongoMemoryStore
from engine.adapters.mongo.jobs import MongoJobStore
from engine.records import MemoryRow, ScopeFields
from engine.upkeep.jobs import LEASE_EXPIRED, RUNNING_LEASE_MS, JobRecord, JobStore, run_job
from schemas import topics
from schemas.bounds import ValueOutOfRange
from schemas.events import JobRequested
from schemas.ids import to_ms
from services.endpoints import Endpoints
from services.groups.jobs.functions import job_functions
from services.ops.scheduler import tick
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


@pytest.fixture
async def jobs(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(stack, minilm, "jobslease", ["jobs"]) as pair:
        yield pair


@pytest.mark.parametrize("param", ["windowDays", "halfLifeDays", "olderThanDays"])
async def test_an_absurd_day_parameter_fails_the_job_instead_of_leaving_it_running_fixes_16_18(
    jobs: tuple[Runtime, MemoryClient], param: str, now_ms: int
) -> None:
    rt, client = jobs
    job_type = {
        "windowDays": "patterns_extract",
        "halfLifeDays": "decay_update",
        "olderThanDays": "cleanup",
    }[param]
    params = {"agentWallet": "0xLease", param: 1e308}
    if job_type == "cleanup":
        params.pop("agentWallet")
    # 1e308 days overflowed int(float(...) * 86_400_000) and left the record `running`: now
    # the SDK refuses it before anything is queued ...
    with pytest.raises(ValueOutOfRange, match=param):
        await client.request_job(job_type, params)
    # ... and a request that reached the jobs group anyway fails at once, not retried
    record = await run_job(
        rt.jobs,
        job_functions(rt),
        job_id=f"absurd-{param}",
        job_type=job_type,
        params=params,
        at=now_ms,
        now=lambda: now_ms,
    )
    assert (record.status, record.error_type, record.attempts) == ("failed", "InputRejected", 1)
    assert param in (record.error or "")
    assert await rt.jobs.running(job_type) == []


@pytest.fixture(params=["memory", "mongo"])
async def job_store(request: pytest.FixtureRequest, jobs: tuple[Runtime, MemoryClient]) -> JobStore:
    rt, _ = jobs
    if request.param == "memory":
        return InMemoryJobStore()
    return MongoJobStore(rt.mongo[rt.settings.mongo.db])


async def test_job_store_renews_a_running_record_and_never_restarts_an_ended_one(
    job_store: JobStore,
    now_ms: int,
) -> None:
    assert await job_store.start(JobRecord("j", "cleanup", "running", now_ms - 10))
    assert await job_store.start(JobRecord("j", "cleanup", "running", now_ms))  # redelivered
    renewed = await job_store.get("j")
    assert renewed is not None
    assert renewed.created_at == now_ms
    ended = JobRecord("j", "cleanup", "completed", now_ms, completed_at=now_ms + 1, attempts=1)
    await job_store.finish(ended)
    assert not await job_store.start(JobRecord("j", "cleanup", "running", now_ms + 2))
    assert await job_store.get("j") == ended


async def test_job_store_abandons_only_the_same_still_running_record(
    job_store: JobStore,
    now_ms: int,
) -> None:
    old, new = now_ms - 2 * RUNNING_LEASE_MS, now_ms
    await job_store.start(JobRecord("a", "cleanup", "running", old))
    await job_store.start(JobRecord("b", "cleanup", "running", new))
    expired = JobRecord(
        "a", "cleanup", "failed", old, completed_at=now_ms, error_type=LEASE_EXPIRED
    )

    assert [r.job_id for r in await job_store.running("cleanup")] == ["b", "a"]  # newest first
    assert await job_store.abandon(expired)
    assert not await job_store.abandon(expired)  # no longer running
    assert not await job_store.abandon(JobRecord("b", "cleanup", "failed", old))  # restarted
    assert await job_store.get("a") == expired
    assert [r.job_id for r in await job_store.running("cleanup")] == ["b"]


async def test_a_running_record_past_its_lease_no_longer_blocks_its_schedule_fixes_16_18(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    rt, client = jobs
    await MongoMemoryStore(rt.mongo[rt.settings.mongo.db]).insert_if_absent(
        MemoryRow(
            "any",
            ScopeFields("0xLease", "ana", None, None, None),
            "something",
            np.ones(384, dtype=np.float32) / np.sqrt(384),
            "all-MiniLM-L6-v2-int8",
            "fact",
            now_ms,
            {},
        )
    )
    sunday = datetime(2019, 3, 3, tzinfo=UTC)  # far in the past: ids no other test uses
    after, until = sunday.replace(hour=0), sunday.replace(hour=4)
    crashed = JobRecord("crashed", "cleanup", "running", to_ms(until) - RUNNING_LEASE_MS - 1)
    await rt.jobs.start(crashed)

    published = await tick(rt, client, after, until)

    assert published == 5  # cleanup too: its worker died hours ago
    ended = await rt.jobs.get("crashed")
    assert ended is not None
    assert ended.status == "failed"
    assert ended.error_type == LEASE_EXPIRED
    fired = await _published_on(rt, "2019-03-03T0")
    assert fired == {  # each request carries its fire time, the job's own time
        "hourly-decay:2019-03-03T04:00Z": sunday.replace(hour=4),
        "daily-cleanup:2019-03-03T02:00Z": sunday.replace(hour=2),
        "daily-consolidation:2019-03-03T02:00Z": sunday.replace(hour=2),
        "daily-patterns:2019-03-03T02:00Z": sunday.replace(hour=2),
        "weekly-archive:2019-03-03T03:00Z": sunday.replace(hour=3),
    }


async def _published_on(rt: Runtime, marker: str) -> dict[str, Any]:
    consumer = AIOKafkaConsumer(
        topics.JOBS,
        bootstrap_servers=rt.endpoints.kafka_bootstrap,
        auto_offset_reset="earliest",
        group_id=None,
    )
    await consumer.start()
    seen: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(seen) < 5:
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for r in records:
                    job = JobRequested.model_validate_json(r.value or b"{}")
                    if marker in job.job_id:
                        seen[job.job_id] = job.occurred_at
    finally:
        await consumer.stop()
    return seen
