"""`mnemostream schedule`: publishes the maintenance schedule's jobs to `memory.jobs.v1`.

Every tick it looks at the firings since the previous tick (at most one day back on
start-up, so a scheduler that was down catches up on the last day, not on months), skips a
schedule whose previous job is still running, and publishes each firing with its
deterministic job id and the fire time as the request's `occurred_at` (the job's time, from
which e.g. the weekly archive's window is derived). A job counts as running only within its
lease (`engine.jobs.RUNNING_LEASE_MS`): a record left `running` by a crashed worker is ended
`failed` and no longer blocks its schedule.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from engine.jobs import live_jobs
from engine.schedules import SCHEDULES, firings, job_id
from schemas import topics
from schemas.events import JobRequested
from schemas.inputs import to_ms
from services.client import MemoryClient
from services.runtime import Runtime

log = logging.getLogger(__name__)
CATCH_UP = timedelta(days=1)


async def tick(rt: Runtime, client: MemoryClient, after: datetime, until: datetime) -> int:
    """Publish the jobs due in (after, until]; returns how many were published. `until` is
    the current time: running jobs' leases are measured against it."""
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
    return published


async def run_scheduler(rt: Runtime, *, every_seconds: float = 30.0) -> None:
    async with MemoryClient(rt.endpoints.kafka_bootstrap, kafka_options=rt.kafka_options) as client:
        last = datetime.now(UTC) - CATCH_UP
        while True:
            now = datetime.now(UTC)
            count = await tick(rt, client, last, now)
            if count:
                log.info("published %d scheduled jobs", count)
            last = now
            await asyncio.sleep(every_seconds)
