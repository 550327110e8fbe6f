"""Request a maintenance job over Kafka and wait for its terminal `memory_jobs` record."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from schemas import topics
from schemas.events import JobRequested
from services.client import MemoryClient
from services.runtime import Runtime


async def run_and_wait(
    rt: Runtime, client: MemoryClient, job_type: str, **params: Any
) -> dict[str, Any]:
    event = JobRequested.model_validate({"type": job_type, "params": params})
    await client.publish(topics.JOBS, event, job_type)
    col = rt.mongo[rt.settings.mongo_db]["memory_jobs"]
    deadline = time.monotonic() + 60
    while True:
        doc = await col.find_one({"_id": event.job_id})
        if doc is not None and doc["status"] != "running":
            return dict(doc)
        assert time.monotonic() < deadline, f"job {job_type} did not finish"
        await asyncio.sleep(0.1)
