"""Maintenance jobs: records, bounded retries, and visible failures (reference §10.6, fixing
§16.18 where failures were swallowed and every job read "completed").

A job request names a `type`, its parameters and its time `at` (the request's `occurred_at`:
the scheduler's fire time for scheduled jobs). `run_job` inserts a `running` record, runs the
job's function with up to `attempts` tries (tenacity's exponential backoff between them), and
ends the record `completed` (with the function's result, the attempts and timings) or `failed` (with
the last error and its type) — whatever the function raised. Bad parameters (`InputRejected`)
fail at once, without retries. The job id is the request's, so a redelivered request for a job
that already ended is not run twice; the function receives `at`, never the wall clock, for
anything that must come out the same when the job runs again (e.g. an archive's window).

A record still `running` after `RUNNING_LEASE_MS` is presumed abandoned (its worker crashed or
was killed mid-job, so nothing will ever end it): `live_jobs` ends it `failed` and no longer
counts it, so a schedule that skips while its previous job runs does not skip forever.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

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

RUNNING_LEASE_MS = 60 * 60 * 1000
"""How long a `running` record is trusted, in milliseconds (1 hour; every job of the schedule
normally ends within minutes, retries included)."""
LEASE_EXPIRED = "LeaseExpired"
"""`error_type` of a record ended by `live_jobs` because its lease ran out."""


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
        """Insert a running record, or replace a running one (a redelivered job starts
        again); False, writing nothing, if the job id already ended."""
        ...

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def finish(self, record: JobRecord) -> None:
        """Write the terminal state (status, result or error, attempts, completedAt)."""
        ...

    async def abandon(self, record: JobRecord) -> bool:
        """Write `record` (a failed one) only if the job is still running with the same
        `created_at`; False if it ended or started again meanwhile."""
        ...

    async def running(self, job_type: str) -> list[JobRecord]:
        """Records of that type still running, newest first, however old."""
        ...

    async def recent(
        self, *, agent: str | None = None, status: JobStatus | None = None, limit: int = 20
    ) -> list[JobRecord]:
        """The newest `limit` (at least 1) records, newest first (by `created_at`, then job
        id): with `agent`, only those whose parameters name it (`agentWallet`, or one of
        `agentWallets`: `names_agent`); with `status`, only those in it."""
        ...


def names_agent(params: Mapping[str, Any], agent: str) -> bool:
    """Whether a job's parameters name `agent`: as `agentWallet` or among `agentWallets`."""
    many = params.get("agentWallets")
    return params.get("agentWallet") == agent or (isinstance(many, list) and agent in many)


JobFunction = Callable[[Mapping[str, Any], int], Awaitable[dict[str, Any]]]
"""A job: (parameters, the job's time in milliseconds since epoch) → its result."""


async def run_job(
    store: JobStore,
    functions: Mapping[str, JobFunction],
    *,
    job_id: str,
    job_type: str,
    params: Mapping[str, Any],
    at: int,
    now: Callable[[], int],
    attempts: int = 3,
    backoff_seconds: float = 0.5,
) -> JobRecord:
    """Run one job to a terminal record (see the module doc); `at` is the job's time, passed
    to its function. Unknown types raise `InputRejected`; a job id that already ended is
    returned as it is. Only cancellation leaves the record `running` (until its lease)."""
    function = functions.get(job_type)
    if function is None:
        raise InputRejected(f"unknown job type {job_type!r}; expected one of {sorted(functions)}")
    record = JobRecord(job_id, job_type, "running", now(), dict(params))
    if not await store.start(record):
        existing = await store.get(job_id)
        if existing is not None:
            return existing
    attempt_count = 0
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(max(attempts, 1)),
            wait=wait_exponential(multiplier=backoff_seconds),  # 0.5 s, 1 s, 2 s, …
            retry=retry_if_exception(_retriable),
            reraise=True,
        ):
            with attempt:
                attempt_count = attempt.retry_state.attempt_number
                try:
                    result = await function(params, at)
                except InputRejected:
                    raise
                except Exception as exc:
                    _log_failure(job_id, attempt_count, exc)
                    raise
    # Not the engine's usual narrow catch: the record must end `failed` whatever the job
    # raised (a job function drives stores, providers and arithmetic on request
    # parameters; an OverflowError left the record `running` and its schedule stuck).
    except Exception as exc:  # noqa: BLE001 (each attempt's failure was logged as it happened)
        error = exc
    else:
        done = JobRecord(
            job_id,
            job_type,
            "completed",
            record.created_at,
            dict(params),
            now(),
            attempt_count,
            result,
        )
        await store.finish(done)
        return done
    failed = replace(
        record,
        status="failed",
        completed_at=now(),
        attempts=attempt_count,
        error=str(error) or type(error).__name__,
        error_type=type(error).__name__,
    )
    await store.finish(failed)
    return failed


def _retriable(exc: BaseException) -> bool:
    """Bad parameters stay bad, and a cancellation (a BaseException) is never retried."""
    return isinstance(exc, Exception) and not isinstance(exc, InputRejected)


def _log_failure(job_id: str, attempt: int, exc: Exception) -> None:
    if isinstance(exc, MemoryError_):
        log.warning("job %s attempt %d failed: %s", job_id, attempt, exc)
    else:
        log.error("job %s attempt %d failed unexpectedly", job_id, attempt, exc_info=exc)


async def live_jobs(
    store: JobStore, job_type: str, *, now: int, lease_ms: int = RUNNING_LEASE_MS
) -> list[JobRecord]:
    """The `running` records of `job_type` started within the lease (`now - created_at <=
    lease_ms`, milliseconds). Older ones are ended `failed` (`error_type` `LeaseExpired`) and
    left out: their worker is gone, and they must not hold their schedule back forever."""
    live: list[JobRecord] = []
    for record in await store.running(job_type):
        if now - record.created_at <= lease_ms:
            live.append(record)
            continue
        expired = replace(
            record,
            status="failed",
            completed_at=now,
            error=f"still running {lease_ms // 60_000} minutes after it started: abandoned",
            error_type=LEASE_EXPIRED,
        )
        if await store.abandon(expired):
            log.warning("job %s: lease expired, recorded failed", record.job_id)
    return live
