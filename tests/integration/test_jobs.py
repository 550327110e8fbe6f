"""Maintenance jobs on the real stack: requested over Kafka, run by the jobs group, recorded
in `memory_jobs`; rows shown before and after each job."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.mongo import MongoMemoryStore
from engine.adapters.mongo.jobs import MongoJobStore
from engine.errors import DependencyFailed
from engine.records import MemoryRow, ScopeFields
from engine.upkeep.jobs import run_job
from schemas import topics
from schemas.bounds import ValueOutOfRange
from schemas.events import JobRequested
from schemas.scope import ScopeError
from services.endpoints import Endpoints
from services.groups.jobs.functions import job_functions
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.jobs import run_and_wait
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

DAY = 86_400_000
VEC = np.ones(384, dtype=np.float32) / np.sqrt(384)


@pytest.fixture
async def jobs(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(stack, minilm, "jobs", ["jobs"]) as pair:
        yield pair


def row(
    vid: str, user: str | None, content: str, age_days: float, *, now: int, **meta: Any
) -> MemoryRow:
    """A fact of 0xJobs said `age_days` before `now` (ms)."""
    return MemoryRow(
        vid,
        ScopeFields("0xJobs", user, None, None, None),
        content,
        VEC,
        "all-MiniLM-L6-v2-int8",
        "fact",
        int(now - age_days * DAY),
        dict(meta),
    )


async def seed(rt: Runtime, *rows: MemoryRow) -> None:
    store = MongoMemoryStore(rt.mongo[rt.settings.mongo.db])
    for r in rows:
        await store.insert_if_absent(r)


async def states(rt: Runtime) -> dict[str, tuple[str, float]]:
    docs = await rt.mongo[rt.settings.mongo.db]["memory"].find({}).to_list(length=None)
    return {d["_id"]: (d["metadata"]["status"], round(d["decayScore"], 3)) for d in docs}


async def test_consolidate_supersedes_older_duplicates_per_user_only_fixes_16_5(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    rt, client = jobs
    await seed(
        rt,
        row("a-new", "ana", "Likes green tea.", 1, now=now_ms),
        row("a-old", "ana", "likes  green tea.", 5, now=now_ms),
        row("a-del", "ana", "Likes green tea.", 0.5, now=now_ms, status="deleted"),
        row("b-one", "ben", "Likes green tea.", 9, now=now_ms),
    )
    before = await states(rt)
    assert before["a-old"][0] == "active"
    record = await run_and_wait(rt, client, "consolidate", agentWallet="0xJobs")
    after = await states(rt)
    assert record["status"] == "completed"
    assert record["result"]["superseded"] == 1
    assert after["a-old"][0] == "superseded"  # the older active copy of ana's
    assert after["a-new"][0] == "active"  # the newest active copy stays (a deleted newer one
    assert after["a-del"][0] == "deleted"  # neither wins nor comes back)
    assert after["b-one"][0] == "active"  # ben said the same thing: another user, untouched


async def test_decay_update_never_undoes_a_delete_and_spares_pinned_rows_fixes_16_16(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    rt, client = jobs
    await seed(
        rt,
        row("month", "ana", "a month old", 30, now=now_ms),
        row("pinned", "ana", "keep", 90, now=now_ms, retention="pinned"),
        row("gone", "ana", "deleted", 30, now=now_ms, status="deleted"),
    )
    store = rt.mongo[rt.settings.mongo.db]["memory"]
    await store.update_one({"_id": "gone"}, {"$set": {"decayScore": 0.0}})
    record = await run_and_wait(rt, client, "decay_update", agentWallet="0xJobs")
    after = await states(rt)
    assert record["status"] == "completed"
    assert record["result"]["updated"] == 1
    assert after["month"][1] == pytest.approx(0.5, abs=0.01)  # one half-life
    assert after["pinned"][1] == 1.0
    assert after["gone"] == ("deleted", 0.0)


async def test_cleanup_deletes_old_decayed_rows_and_tombstones_but_keeps_pinned(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    rt, client = jobs
    await seed(
        rt,
        row("stale", "ana", "old", 120, now=now_ms),
        row("pin", "ana", "old pinned", 120, now=now_ms, retention="pinned"),
        row("tomb", "ana", "old deleted", 100, now=now_ms, status="deleted"),
        row("fresh", "ana", "new", 1, now=now_ms),
    )
    store = rt.mongo[rt.settings.mongo.db]["memory"]
    await store.update_many({"_id": {"$in": ["stale", "pin"]}}, {"$set": {"decayScore": 0.06}})
    record = await run_and_wait(rt, client, "cleanup", olderThanDays=90)
    after = await states(rt)
    assert record["status"] == "completed"
    assert record["result"]["deleted"] == 2
    assert set(after) == {"pin", "fresh"}


async def test_a_job_with_bad_parameters_is_refused_before_anything_is_queued(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    rt, client = jobs
    with pytest.raises(ScopeError, match="agentWallet or agentWallets are required"):
        await client.request_job("consolidate")
    with pytest.raises(ValueOutOfRange, match="windowDays: Input should be greater than 0"):
        await client.request_job("patterns_extract", {"agentWallet": "0xJobs", "windowDays": -1})
    with pytest.raises(ValueOutOfRange, match="batchSize"):
        await client.request_job("decay_update", {"agentWallet": "0xJobs", "batchSize": 0})
    # a request that reached the jobs group anyway fails there at once, naming what is wrong
    record = await run_job(
        rt.jobs,
        job_functions(rt),
        job_id="job-no-agent",
        job_type="consolidate",
        params={},
        at=now_ms,
        now=lambda: now_ms,
    )
    assert (record.status, record.error_type, record.attempts) == ("failed", "InputRejected", 1)
    assert "agentWallet" in (record.error or "")


async def test_a_failing_job_is_retried_then_recorded_failed_fixes_16_18(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    rt, _ = jobs
    store = MongoJobStore(rt.mongo[rt.settings.mongo.db])
    calls = 0

    async def flaky(params: Any, at: int) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        raise DependencyFailed(f"mongo unreachable (try {calls})")

    record = await run_job(
        store,
        {"cleanup": flaky},
        job_id="job-flaky",
        job_type="cleanup",
        params={},
        at=now_ms,
        now=lambda: now_ms,
        attempts=3,
        backoff_seconds=0.01,
    )
    stored = await store.get("job-flaky")
    assert calls == 3
    assert record.status == "failed"
    assert stored is not None
    assert stored.status == "failed"
    assert stored.attempts == 3
    assert stored.error == "mongo unreachable (try 3)"
    assert stored.error_type == "DependencyFailed"


async def test_the_scheduler_publishes_due_jobs_and_skips_a_type_still_running(
    jobs: tuple[Runtime, MemoryClient],
    now_ms: int,
) -> None:
    from datetime import UTC, datetime

    from aiokafka import AIOKafkaConsumer

    from engine.upkeep.jobs import JobRecord
    from services.ops.scheduler import tick

    rt, client = jobs
    await seed(rt, row("any", "ana", "something", 1, now=now_ms))
    await rt.jobs.start(JobRecord("still-running", "cleanup", "running", now_ms))
    sunday = datetime(2020, 1, 5, tzinfo=UTC)  # far in the past: ids no other test uses
    published = await tick(rt, client, sunday.replace(hour=0), sunday.replace(hour=4))
    assert published == 4  # decay, consolidation, patterns, archive — cleanup is running
    consumer = AIOKafkaConsumer(
        topics.JOBS,
        bootstrap_servers=rt.endpoints.kafka_bootstrap,
        auto_offset_reset="earliest",
        group_id=None,
    )
    await consumer.start()
    try:
        seen: set[str] = set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(seen) < 4:
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for r in records:
                    job = JobRequested.model_validate_json(r.value or b"{}")
                    if job.job_id.endswith("2020-01-05T02:00Z") or "2020-01-05T0" in job.job_id:
                        seen.add(job.job_id)
    finally:
        await consumer.stop()
    assert seen == {
        "hourly-decay:2020-01-05T04:00Z",
        "daily-consolidation:2020-01-05T02:00Z",
        "daily-patterns:2020-01-05T02:00Z",
        "weekly-archive:2020-01-05T03:00Z",
    }
