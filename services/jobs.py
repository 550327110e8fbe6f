"""jobs group: `JobRequested` → run the maintenance job (bounded retries, a `memory_jobs`
record that ends `completed` or `failed` with its error) → invalidate what it touched.

A job's time is its request's `occurred_at` (the scheduler sets it to the fire time): windows
that must come out the same when the job runs again (archives, pattern recounts) end there,
not at the clock. Day-valued parameters are checked before any work (`days_param`): an absurd
value fails the job with a clear error instead of crashing it (§16.18)."""

from __future__ import annotations

import base64
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from faststream.kafka import KafkaBroker

from engine import maintenance
from engine.archives import build_archive, embed_archive, encrypt_payload, tenant_groups
from engine.context import invalidate
from engine.errors import InputRejected
from engine.jobs import JobFunction, days_ms, days_param, run_job
from engine.patterns import executions_from_transcript
from engine.scoping import GLOBAL_NAMESPACE, TenantFilter
from schemas import topics
from schemas.events import JobRequested
from schemas.inputs import to_ms
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
    """The job types this build runs, bound to the runtime's stores. Each takes (parameters,
    the job's time in milliseconds since epoch)."""

    async def touched(agents: list[str]) -> None:
        for agent in agents:
            await invalidate(rt.search.cache, Scope.parse({"agentWallet": agent}))

    async def consolidate(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        agents = _agents(params)
        superseded, users = 0, 0
        for agent in agents:
            done = await maintenance.consolidate(rt.memory, rt.maintenance, agent)
            superseded, users = superseded + done.superseded, users + done.users
        await touched(agents)
        return {"agents": len(agents), "users": users, "superseded": superseded}

    # decay and cleanup measure ages against the clock, not the job's time: a late run
    # should decay and purge by the rows' ages when it runs.
    async def decay_update(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        half_life = days_param(params, "halfLifeDays", rt.settings.half_life_days)
        agents = (
            _agents(params)
            if params.get("agentWallet") or params.get("agentWallets")
            else (await rt.maintenance.agents())
        )
        done = await maintenance.decay_update(
            rt.memory, rt.maintenance, agents=agents, now=_now(), half_life_days=half_life
        )
        await touched(agents)
        return {"updated": done.updated, "avgDecayScore": round(done.average, 6)}

    async def cleanup(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        days = days_param(params, "olderThanDays", 90)
        deleted = await maintenance.cleanup(rt.maintenance, now=_now(), older_than_days=days)
        await rt.search.cache.bump([GLOBAL_NAMESPACE], rt.search.policy.namespace_ttl_seconds)
        return {"deleted": deleted}

    async def patterns_extract(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        since = at - days_ms(days_param(params, "windowDays", 1))
        agents = _agents(params)
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
            at=to_ms(event.occurred_at),
            now=_now,
            attempts=rt.settings.max_attempts,
            backoff_seconds=rt.settings.retry_backoff_ms / 1000,
        )

    on_event(broker, rt, topics.JOBS, GROUP, JobRequested, run, name="on_job_requested")


def _archive_job(rt: Runtime, touched: Callable[[list[str]], Awaitable[None]]) -> JobFunction:
    """archive_create: per full tenant (agent, user, mode, hai id), the rows of the window
    `[at - windowDays, at)` → a compressed archive (never empty, never mixing users), pinned
    to IPFS only encrypted.

    The window ends at the job's time, so a retried or redelivered job rebuilds the same
    archives (same ids: nothing new is inserted), and pins any of them whose pin failed.
    Result: `archives`, the ids of the job's archives (inserted now or by an earlier run);
    `inserted`, how many were new; `pinned`, how many were pinned by this run."""

    async def pin_if_unpinned(archive_id: str) -> bool:
        """Pin the stored archive unless it already has a CID: a fresh one, or one whose
        pin failed on an earlier run of the job."""
        if rt.pinner is None or rt.settings.archive_encryption_key is None:
            return False
        content = await rt.maintenance.unpinned_content(archive_id)
        if content is None:
            return False
        key = base64.b64decode(rt.settings.archive_encryption_key.get_secret_value())
        blob = encrypt_payload(content.encode(), key, archive_id=archive_id)
        cid = await rt.pinner.pin_archive(archive_id, blob)
        await rt.archives.set_cid(archive_id, cid)
        return True

    async def archive_create(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        end = at
        start = end - days_ms(days_param(params, "windowDays", 7))
        agents = _agents(params)
        archives: list[str] = []
        inserted = pinned = 0
        for agent in agents:
            for user in await rt.maintenance.users_of(agent):
                rows = await rt.memory.active_rows(
                    TenantFilter(agent_wallet=agent, user_address=user)
                )
                for scope, group in tenant_groups(rows, start, end):
                    payload = build_archive(
                        group, scope=scope, start=start, end=end, created_at=end
                    )
                    if payload is None:  # no empty archives
                        continue
                    payload = await embed_archive(payload, rt.embedder)
                    record = replace(payload.record, content=payload.content)
                    archives.append(record.archive_id)
                    if await rt.archives.insert_if_absent(record):
                        inserted += 1
                    if await pin_if_unpinned(record.archive_id):
                        pinned += 1
        await touched(agents)
        return {"archives": archives, "inserted": inserted, "pinned": pinned}

    return archive_create
