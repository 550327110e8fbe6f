"""jobs group: `JobRequested` → run the maintenance job (bounded retries, a `memory_jobs`
record that ends `completed` or `failed` with its error) → invalidate what it touched.

A job's time is its request's `occurred_at` (the scheduler sets it to the fire time): windows
that must come out the same when the job runs again (archives, pattern recounts) end there,
not at the clock. Every job reads its parameters through its own schema (`schemas.jobs`, the
one the gateway, the SDK and the CLI check before queueing, and the `JobRequested` contract
checks on decode): a request that reaches a job function anyway with a parameter the job does
not take, or one out of range, fails the job at once (`InputRejected`, no retry) with an error
naming it, before any work (§16.18)."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from engine.upkeep.jobs import run_job
from schemas import topics
from schemas.events import JobRequested
from schemas.ids import to_ms
from services.groups.jobs.functions import job_functions, now_ms
from services.runtime import Runtime
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics

GROUP = "jobs"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    functions = job_functions(rt)

    async def run(event: JobRequested) -> None:
        await run_job(
            rt.jobs,
            functions,
            job_id=event.job_id,
            job_type=event.type,
            params=event.params,
            at=to_ms(event.occurred_at),
            now=now_ms,
            attempts=rt.settings.max_attempts,
            backoff_seconds=rt.settings.retry_backoff_ms / 1000,
        )

    group.on_event(topics.JOBS, JobRequested, run, name="on_job_requested")
    return group.router
