"""jobs group: `JobRequested` → run the maintenance job (bounded retries, a `memory_jobs`
record that ends `completed` or `failed` with its error) → invalidate what it touched."""

from __future__ import annotations

import base64
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from faststream.kafka import KafkaBroker

from engine import maintenance
from engine.archives import build_archive, embed_archive, encrypt_payload
from engine.context import invalidate
from engine.errors import InputRejected
from engine.jobs import JobFunction, run_job
from engine.patterns import executions_from_transcript
from engine.records import ScopeFields
from engine.scoping import GLOBAL_NAMESPACE, TenantFilter
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

    async def patterns_extract(params: Mapping[str, Any]) -> dict[str, Any]:
        agents = _agents(params)
        since = _now() - int(float(params.get("windowDays", 1)) * 86_400_000)
        transcripts = counted = 0
        for agent in agents:
            for transcript in await rt.transcripts.of_agent(agent, since):
                transcripts += 1
                for run in executions_from_transcript(transcript):
                    counted += await rt.patterns.record_execution(
                        run.seed, turn_id=run.turn_id, succeeded=run.succeeded, at=run.at
                    )
        await touched(agents)
        return {"transcripts": transcripts, "executionsCounted": counted}

    archive_create = _archive_job(rt, touched)

    return {
        "consolidate": consolidate,
        "decay_update": decay_update,
        "cleanup": cleanup,
        "patterns_extract": patterns_extract,
        "archive_create": archive_create,
    }


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


def _archive_job(rt: Runtime, touched: Callable[[list[str]], Awaitable[None]]) -> JobFunction:
    """archive_create: per agent and user, the window's rows → a compressed archive (never
    empty, never mixing users), pinned to IPFS only encrypted."""

    async def archive_create(params: Mapping[str, Any]) -> dict[str, Any]:
        agents = _agents(params)
        end = _now()
        start = end - int(float(params.get("windowDays", 7)) * 86_400_000)
        created: list[str] = []
        pinned = 0
        for agent in agents:
            for user in await rt.maintenance.users_of(agent):
                rows = [
                    r
                    for r in await rt.memory.active_rows(
                        TenantFilter(agent_wallet=agent, user_address=user)
                    )
                    if start <= r.created_at < end and r.scope.mode is None and not r.scope.hai_id
                ]
                scope = ScopeFields(agent, user, None, None, None)
                payload = build_archive(rows, scope=scope, start=start, end=end, created_at=end)
                if payload is None:  # no empty archives
                    continue
                payload = await embed_archive(payload, rt.embedder)
                record = replace(payload.record, content=payload.content)
                if not await rt.archives.insert_if_absent(record):
                    continue
                created.append(record.archive_id)
                if rt.pinner is not None and rt.settings.archive_encryption_key is not None:
                    key = base64.b64decode(rt.settings.archive_encryption_key.get_secret_value())
                    blob = encrypt_payload(
                        payload.content.encode(), key, archive_id=record.archive_id
                    )
                    cid = await rt.pinner.pin_archive(record.archive_id, blob)
                    await rt.archives.set_cid(record.archive_id, cid)
                    pinned += 1
        await touched(agents)
        return {"archives": created, "pinned": pinned}

    return archive_create
