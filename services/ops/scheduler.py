"""`mnemostream schedule`: publishes the maintenance schedule's jobs to `memory.jobs.v1`.

Every tick it looks at the firings since the previous tick (at most one day back on
start-up, so a scheduler that was down catches up on the last day, not on months), skips a
schedule whose previous job is still running, and publishes each firing with its
deterministic job id and the fire time as the request's `occurred_at` (the job's time, from
which e.g. the weekly archive's window is derived). A job counts as running only within its
lease (`engine.upkeep.jobs.RUNNING_LEASE_MS`): a record left `running` by a crashed worker is ended
`failed` and no longer blocks its schedule.

With `settings.http_port` set, `serve_scheduler` serves `/livez`, `/readyz` and `/metrics`
(`services.stream.health`) from before the database is reached until it stops. `/readyz` is 503
until the database schema is ensured and the Kafka client has started (which creates the
jobs topic, or finds it). Metrics (a registry of its own):

| metric | type | labels |
| --- | --- | --- |
| `mnemostream_scheduler_jobs_published_total` | counter | type |
| `mnemostream_scheduler_last_fire_timestamp_seconds` (fire time, Unix seconds) | gauge | type |
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, Counter, Gauge

from engine.upkeep.jobs import live_jobs
from engine.upkeep.schedules import SCHEDULES, firings, job_id
from schemas import topics
from schemas.events import JobRequested
from schemas.ids import to_ms
from services.runtime import Runtime, open_runtime
from services.sdk.client import MemoryClient
from services.settings import Settings
from services.stream.health import health_app, serving

log = logging.getLogger(__name__)
CATCH_UP = timedelta(days=1)


class SchedulerMetrics:
    """The scheduler's metrics, registered in `registry` (a fresh one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.published = Counter(
            "mnemostream_scheduler_jobs_published",
            "Scheduled job requests published to the jobs topic, by job type.",
            ["type"],
            registry=self.registry,
        )
        self.last_fire = Gauge(
            "mnemostream_scheduler_last_fire_timestamp_seconds",
            "Fire time (Unix seconds) of the newest published firing, by job type.",
            ["type"],
            registry=self.registry,
        )

    def fired(self, job_type: str, fire: datetime) -> None:
        """Count one published job of `job_type` that fired at `fire` (timezone-aware)."""
        self.published.labels(type=job_type).inc()
        self.last_fire.labels(type=job_type).set(fire.timestamp())


class SchedulerReadiness:
    """What the scheduler's `/readyz` checks: set by `serve_scheduler` as start-up proceeds."""

    def __init__(self) -> None:
        self.schema_ready = False
        self.kafka_ready = False

    def missing(self) -> list[str]:
        """What keeps the scheduler from being ready, in words; empty when ready."""
        missing = [] if self.schema_ready else ["database schema not ensured yet"]
        if not self.kafka_ready:
            missing.append(f"Kafka client not started ({topics.JOBS} not created or seen yet)")
        return missing


async def tick(
    rt: Runtime,
    client: MemoryClient,
    after: datetime,
    until: datetime,
    metrics: SchedulerMetrics | None = None,
) -> int:
    """Publish the jobs due in (after, until]; returns how many were published (each
    counted in `metrics`, if given). `until` is the current time: running jobs' leases are
    measured against it."""
    published = 0
    for schedule in SCHEDULES:
        due = firings(schedule, after, until)
        if not due:
            continue
        if await live_jobs(rt.jobs, schedule.job_type, now=to_ms(until)):
            log.info("skipping %s: a %s job is still running", schedule.name, schedule.job_type)
            continue
        fire = due[-1]  # a late scheduler runs the latest firing once, not every missed one
        params = dict(schedule.params)
        if schedule.per_agent:
            params["agentWallets"] = await rt.maintenance.agents()
            if not params["agentWallets"]:
                continue
        event = JobRequested(
            job_id=job_id(schedule, fire),
            occurred_at=fire,
            type=schedule.job_type,
            params=params,
        )
        await client.publish(topics.JOBS, event, schedule.job_type)
        published += 1
        if metrics is not None:
            metrics.fired(schedule.job_type, fire)
    return published


async def run_scheduler(
    rt: Runtime,
    *,
    every_seconds: float = 30.0,
    metrics: SchedulerMetrics | None = None,
    readiness: SchedulerReadiness | None = None,
) -> None:
    """Tick every `every_seconds` until cancelled. The Kafka client's start creates every
    topic (the jobs topic included) or finds it; then `readiness.kafka_ready` is set."""
    async with MemoryClient(rt.endpoints.kafka_bootstrap, kafka_options=rt.kafka_options) as client:
        if readiness is not None:
            readiness.kafka_ready = True
        last = datetime.now(UTC) - CATCH_UP
        while True:
            now = datetime.now(UTC)
            count = await tick(rt, client, last, now, metrics)
            if count:
                log.info("published %d scheduled jobs", count)
            last = now
            await asyncio.sleep(every_seconds)


async def serve_scheduler(
    settings: Settings, *, every_seconds: float = 30.0, http_required: bool = True
) -> None:
    """Run the scheduler until cancelled, with `/livez`, `/readyz` and `/metrics` on
    `settings.http_host:http_port` (0: not served; a port that cannot be bound: OSError,
    or with `http_required=False` a warning and no endpoints)."""
    metrics, readiness = SchedulerMetrics(), SchedulerReadiness()
    # health first: /livez answers and /readyz says what is missing during the whole start-up
    async with (
        serving(
            health_app(readiness, metrics.registry),
            settings.http_host,
            settings.http_port,
            required=http_required,
        ),
        open_runtime(settings) as rt,
    ):
        readiness.schema_ready = True  # open_runtime ensured every collection and index
        await run_scheduler(rt, every_seconds=every_seconds, metrics=metrics, readiness=readiness)
