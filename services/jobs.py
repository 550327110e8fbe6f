"""jobs group: `JobRequested` → run the maintenance job (bounded retries, a `memory_jobs`
record that ends `completed` or `failed` with its error) → invalidate what it touched."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from faststream.kafka import KafkaBroker

from engine import maintenance
from engine.context import invalidate
from engine.errors import InputRejected
from engine.jobs import JobFunction, run_job
from engine.scoping import GLOBAL_NAMESPACE
from schemas import topics
from schemas.events import JobRequested
from schemas.scope import Scope
from services.consumers import on_event
from services.runtime import Runtime

GROUP = "jobs"


def _now() -> int:
    return int(time.time() * 1000)


def _agents(params: Mapping[str, Any]) -> list[str]:
    agents = params.get("agentWallets") or (
        [params["agentWallet"]] if params.get("agentWallet") else []
    )
    if (
        not agents
        or not isinstance(agents, list)
        or not all(isinstance(a, str) and a for a in agents)
    ):
        raise InputRejected("agentWallet or agentWallets (strings) are required")
    return agents


def job_functions(rt: Runtime) -> dict[str, JobFunction]:
    """The job types this build runs, bound to the runtime's stores."""

    async def touched(agents: list[str]) -> None:
        for agent in agents:
            await invalidate(rt.search.cache, Scope.parse({"agentWallet": agent}))

    async def consolidate(params: Mapping[str, Any]) -> dict[str, Any]:
        agents = _agents(params)
        superseded, users = 0, 0
        for agent in agents:
            done = await maintenance.consolidate(rt.memory, rt.maintenance, agent)
            superseded, users = superseded + done.superseded, users + done.users
        await touched(agents)
        return {"agents": len(agents), "users": users, "superseded": superseded}

    async def decay_update(params: Mapping[str, Any]) -> dict[str, Any]:
        agents = (
            _agents(params)
            if params.get("agentWallet") or params.get("agentWallets")
            else (await rt.maintenance.agents())
        )
        half_life = float(params.get("halfLifeDays", rt.settings.half_life_days))
        done = await maintenance.decay_update(
            rt.memory, rt.maintenance, agents=agents, now=_now(), half_life_days=half_life
        )
        await touched(agents)
        return {"updated": done.updated, "avgDecayScore": round(done.average, 6)}

    async def cleanup(params: Mapping[str, Any]) -> dict[str, Any]:
        days = float(params.get("olderThanDays", 90))
        deleted = await maintenance.cleanup(rt.maintenance, now=_now(), older_than_days=days)
        await rt.search.cache.bump([GLOBAL_NAMESPACE], rt.search.policy.namespace_ttl_seconds)
        return {"deleted": deleted}

    return {"consolidate": consolidate, "decay_update": decay_update, "cleanup": cleanup}


def register(broker: KafkaBroker, rt: Runtime) -> None:
    functions = job_functions(rt)

    async def run(event: JobRequested) -> None:
        await run_job(
            rt.jobs,
            functions,
            job_id=event.job_id,
            job_type=event.type,
            params=event.params,
            now=_now,
            attempts=rt.settings.max_attempts,
            backoff_seconds=rt.settings.retry_backoff_ms / 1000,
        )

    on_event(broker, rt, topics.JOBS, GROUP, JobRequested, run, name="on_job_requested")
