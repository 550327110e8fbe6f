"""`run_job` and `live_jobs` over the in-memory job store: every failure ends the record
`failed` (§16.18), bad parameters (`InputRejected`) fail at once without retries, and a
`running` record older than its lease stops holding its schedule back. (The parameters'
ranges themselves: `test_job_params.py`.)"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from engine.adapters.memory import InMemoryJobStore
from engine.errors import DependencyFailed
from engine.upkeep.jobs import (
    LEASE_EXPIRED,
    RUNNING_LEASE_MS,
    JobFunction,
    JobRecord,
    live_jobs,
    run_job,
)
from schemas.jobs import CleanupParams
from services.groups.jobs.functions import typed

T0 = 1_767_225_600_000  # 2026-01-01T00:00Z


async def run(
    store: InMemoryJobStore,
    function: JobFunction,
    *,
    job_id: str = "job-1",
    params: Mapping[str, Any] | None = None,
    at: int = T0,
) -> JobRecord:
    return await run_job(
        store,
        {"cleanup": function},
        job_id=job_id,
        job_type="cleanup",
        params=params or {},
        at=at,
        now=lambda: T0 + 5,
        attempts=3,
        backoff_seconds=0,
    )


async def test_an_unexpected_error_is_retried_then_recorded_failed_fixes_16_18() -> None:
    store = InMemoryJobStore()
    calls = 0

    async def overflowing(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"since": at - int(float("inf"))}  # OverflowError, not a MemoryError_

    record = await run(store, overflowing)

    assert calls == 3  # the bounded retries still apply
    assert record.status == "failed"
    assert record.error_type == "OverflowError"
    assert "infinity" in (record.error or "")
    assert store.records["job-1"] == record  # not left `running`
    assert await store.running("cleanup") == []


async def test_an_error_without_a_message_is_recorded_by_its_type() -> None:
    store = InMemoryJobStore()

    async def broken(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        raise KeyError

    record = await run(store, broken)

    assert (record.status, record.error, record.error_type) == ("failed", "KeyError", "KeyError")


async def test_bad_parameters_fail_at_once_with_the_message() -> None:
    store = InMemoryJobStore()
    calls = 0

    async def job(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"days": typed(CleanupParams, params).olderThanDays}

    record = await run(store, job, params={"olderThanDays": 1e308})

    assert calls == 1
    assert record.status == "failed"
    assert record.error_type == "InputRejected"
    assert "olderThanDays" in (record.error or "")


async def test_the_job_function_receives_the_jobs_time_not_the_clock() -> None:
    store = InMemoryJobStore()
    seen: list[int] = []

    async def job(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        seen.append(at)
        return {}

    record = await run(store, job, at=T0 - 42)

    assert seen == [T0 - 42]
    assert record.status == "completed"
    assert record.created_at == T0 + 5


async def test_a_job_that_ended_is_not_run_again_but_a_running_one_is() -> None:
    store = InMemoryJobStore()
    calls = 0

    async def job(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"calls": calls}

    await store.start(JobRecord("crashed", "cleanup", "running", T0 - RUNNING_LEASE_MS * 5))
    again = await run(store, job, job_id="crashed")  # redelivered after its worker died
    twice = await run(store, job, job_id="crashed")

    assert calls == 1
    assert again.status == "completed"
    assert again.created_at == T0 + 5  # the re-run's own start, not the dead worker's
    assert twice == again


async def test_a_running_record_past_its_lease_is_ended_failed_and_not_counted() -> None:
    store = InMemoryJobStore()
    now = T0
    stale = JobRecord("stale", "cleanup", "running", now - RUNNING_LEASE_MS - 1)
    fresh = JobRecord("fresh", "cleanup", "running", now - RUNNING_LEASE_MS)
    other = JobRecord("other", "decay_update", "running", now - 10 * RUNNING_LEASE_MS)
    for record in (stale, fresh, other):
        await store.start(record)

    live = await live_jobs(store, "cleanup", now=now)

    assert [r.job_id for r in live] == ["fresh"]
    ended = store.records["stale"]
    assert ended.status == "failed"
    assert ended.error_type == LEASE_EXPIRED
    assert ended.completed_at == now
    assert store.records["other"].status == "running"  # another type: not looked at


async def test_a_job_that_ends_while_its_lease_is_checked_keeps_its_own_end() -> None:
    store = InMemoryJobStore()
    start = T0 - 2 * RUNNING_LEASE_MS
    await store.start(JobRecord("slow", "cleanup", "running", start))
    done = JobRecord("slow", "cleanup", "completed", start, completed_at=T0, attempts=1)
    await store.finish(done)
    expired = JobRecord("slow", "cleanup", "failed", start, error_type=LEASE_EXPIRED)

    assert not await store.abandon(expired)
    assert store.records["slow"] == done


async def test_dependency_failures_are_retried_then_recorded() -> None:
    store = InMemoryJobStore()
    calls = 0

    async def flaky(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise DependencyFailed("mongo unreachable")
        return {"ok": True}

    record = await run(store, flaky)

    assert (record.status, record.attempts, record.result) == ("completed", 3, {"ok": True})


async def test_a_cancelled_job_is_not_retried_and_stays_running_until_its_lease() -> None:
    """Cancellation (a BaseException) ends the attempt at once: no retry, no `failed` record
    (a retry library that catches everything would retry it)."""
    store = InMemoryJobStore()
    calls = 0

    async def cancelled(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await run(store, cancelled)

    assert calls == 1
    record = await store.get("job-1")
    assert record is not None
    assert record.status == "running"
