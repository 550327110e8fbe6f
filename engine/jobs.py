"""Maintenance jobs: records, bounded retries, and visible failures (REFERENCE §10.6, fixing
§16.18 where failures were swallowed and every job read "completed").

A job request names a `type` and its parameters; `run_job` inserts a `running` record, runs
the job's function with up to `attempts` tries (exponential backoff between them), and ends
the record `completed` (with the function's result, the attempts and timings) or `failed`
(with the last error and its type). The job id is the request's, so a redelivered request
for a job that already completed is not run twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from engine.errors import InputRejected, MemoryError_

log = logging.getLogger(__name__)

JobType = Literal["consolidate", "decay_update", "cleanup", "patterns_extract", "archive_create"]
JOB_TYPES: tuple[JobType, ...] = (
    "consolidate",
    "decay_update",
    "cleanup",
    "patterns_extract",
    "archive_create",
)
JobStatus = Literal["running", "completed", "failed"]


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    type: str
    status: JobStatus
    created_at: int
    params: dict[str, Any] = field(default_factory=dict)
    completed_at: int | None = None
    attempts: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    error_type: str | None = None


class JobStore(Protocol):
    """`memory_jobs`: one record per job id."""

    async def start(self, record: JobRecord) -> bool:
        """Insert a running record; False if the job id already has a record."""
        ...

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def finish(self, record: JobRecord) -> None:
        """Write the terminal state (status, result or error, attempts, completedAt)."""
        ...

    async def running(self, job_type: str) -> list[JobRecord]:
        """Records of that type still running (for skip-if-running scheduling)."""
        ...


JobFunction = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


async def run_job(
    store: JobStore,
    functions: Mapping[str, JobFunction],
    *,
    job_id: str,
    job_type: str,
    params: Mapping[str, Any],
    now: Callable[[], int],
    attempts: int = 3,
    backoff_seconds: float = 0.5,
) -> JobRecord:
    """Run one job to a terminal record (see the module doc). Unknown types raise
    `InputRejected`; a job id that already finished is returned as it is."""
    function = functions.get(job_type)
    if function is None:
        raise InputRejected(f"unknown job type {job_type!r}; expected one of {sorted(functions)}")
    existing = await store.get(job_id)
    if existing is not None and existing.status != "running":
        return existing
    record = JobRecord(job_id, job_type, "running", now(), dict(params))
    await store.start(record)
    error: BaseException | None = None
    attempt_count = 0
    for attempt in range(1, attempts + 1):
        try:
            result = await function(params)
        except InputRejected as exc:  # bad parameters: retrying cannot help
            error = exc
            attempt_count = attempt
            break
        except MemoryError_ as exc:
            error = exc
            attempt_count = attempt
            log.warning("job %s attempt %d failed: %s", job_id, attempt, exc)
            if attempt < attempts:
                await asyncio.sleep(backoff_seconds * 2 ** (attempt - 1))
            continue
        done = JobRecord(
            job_id, job_type, "completed", record.created_at, dict(params), now(), attempt, result
        )
        await store.finish(done)
        return done
    failed = JobRecord(
        job_id,
        job_type,
        "failed",
        record.created_at,
        dict(params),
        now(),
        attempt_count,
        None,
        str(error),
        type(error).__name__,
    )
    await store.finish(failed)
    return failed
