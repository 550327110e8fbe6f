"""Request a maintenance job over Kafka (the SDK's `request_job`: its parameters checked
first) and wait for its terminal `memory_jobs` record."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from services.runtime import Runtime
from services.sdk.client import MemoryClient


async def run_and_wait(
    rt: Runtime, client: MemoryClient, job_type: str, **params: Any
) -> dict[str, Any]:
    event = await client.request_job(job_type, params)
    col = rt.mongo[rt.settings.mongo.db]["memory_jobs"]
    deadline = time.monotonic() + 60
    while True:
        doc = await col.find_one({"_id": event.job_id})
        if doc is not None and doc["status"] != "running":
            return dict(doc)
        assert time.monotonic() < deadline, f"job {job_type} did not finish"
        await asyncio.sleep(0.1)
