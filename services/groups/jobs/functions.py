"""The maintenance job functions (`job_functions`), each reading its parameters through its
own schema (`schemas.jobs`); the jobs group (`services.groups.jobs`) runs them."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from engine.errors import InputRejected
from engine.history import Ledger
from engine.ingest.patterns import executions_from_transcript
from engine.records import Cause
from engine.retrieval.invalidation import invalidate
from engine.scoping import GLOBAL_NAMESPACE, TenantFilter
from engine.upkeep import maintenance
from engine.upkeep.archives import build_archive, embed_archive, tenant_groups
from engine.upkeep.jobs import JobFunction
from schemas.jobs import (
    ArchiveCreateParams,
    CleanupParams,
    ConsolidateParams,
    DecayUpdateParams,
    JobParams,
    PatternsExtractParams,
    parse_job_params,
)
from schemas.scope import Scope, ScopeError
from services.groups.jobs.archive_pins import pin_if_unpinned
from services.runtime import Runtime

DEFAULT_BATCH = 500
"""Rows written per bulk request when `batchSize` is not given."""
P = TypeVar("P", bound=JobParams)


def now_ms() -> int:
    return int(time.time() * 1000)


def typed(model: type[P], params: Mapping[str, Any]) -> P:
    """`params` as the job's typed parameters (`schemas.jobs.parse_job_params`), or
    `InputRejected` with the refusal's one-line message."""
    try:
        return parse_job_params(model, params)
    except ScopeError as exc:
        raise InputRejected(str(exc)) from None


def _checked(
    model: type[P], function: Callable[[P, int], Awaitable[dict[str, Any]]]
) -> JobFunction:
    """`function` behind its parameters' schema: a parameter it would ignore, or one out of
    range, fails the job before any work."""

    async def run(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        return await function(typed(model, params), at)

    return run


def job_ledger(rt: Runtime, job_type: str, at: int) -> Ledger:
    """The item history of a job's changes: caused by the job `<type>@<its time>` (the job
    record of that type and time says which run it was)."""
    return Ledger(rt.history, Cause("job", f"{job_type}@{at}", job_type, "job"))


def job_functions(rt: Runtime) -> dict[str, JobFunction]:
    """The job types this build runs, bound to the runtime's stores. Each takes (parameters,
    the job's time in milliseconds since epoch)."""

    async def touched(agents: list[str]) -> None:
        for agent in agents:
            await invalidate(rt.cache, Scope.parse({"agentWallet": agent}))

    async def consolidate(params: ConsolidateParams, at: int) -> dict[str, Any]:
        agents = params.agents()
        superseded, users = 0, 0
        for agent in agents:
            done = await maintenance.consolidate(
                rt.memory, rt.maintenance, agent, ledger=job_ledger(rt, "consolidate", at), at=at
            )
            superseded, users = superseded + done.superseded, users + done.users
        await touched(agents)
        return {"agents": len(agents), "users": users, "superseded": superseded}

    # decay and cleanup measure ages against the clock, not the job's time: a late run
    # should decay and purge by the rows' ages when it runs.
    async def decay_update(params: DecayUpdateParams, at: int) -> dict[str, Any]:
        half_life = params.halfLifeDays or rt.settings.search.half_life_days
        batch = params.batchSize or DEFAULT_BATCH
        agents = params.agents() or await rt.maintenance.agents()
        done = await maintenance.decay_update(
            rt.memory,
            rt.maintenance,
            agents=agents,
            now=now_ms(),
            half_life_days=half_life,
            batch=batch,
        )
        await touched(agents)
        return {"updated": done.updated, "avgDecayScore": round(done.average, 6)}

    async def cleanup(params: CleanupParams, at: int) -> dict[str, Any]:
        days = params.olderThanDays or 90
        now = now_ms()
        deleted = await maintenance.cleanup(
            rt.maintenance, now=now, older_than_days=days, ledger=job_ledger(rt, "cleanup", at)
        )
        await rt.cache.bump([GLOBAL_NAMESPACE], rt.search_policy.namespace_ttl_seconds)
        return {"deleted": deleted}

    async def patterns_extract(params: PatternsExtractParams, at: int) -> dict[str, Any]:
        since, until = params.window(at, 1)
        agents = params.agents()
        transcripts = counted = 0
        for agent in agents:
            for transcript in await rt.transcripts.of_agent(agent, since):
                transcripts += 1
                for run in executions_from_transcript(transcript):
                    if run.at >= until:
                        continue  # after the window (counted by a later recount)
                    counted += await rt.patterns.record_execution(
                        run.seed, turn_id=run.turn_id, succeeded=run.succeeded, at=run.at
                    )
        await touched(agents)
        return {"transcripts": transcripts, "executionsCounted": counted}

    archive_create = _archive_job(rt, touched)

    return {
        "consolidate": _checked(ConsolidateParams, consolidate),
        "decay_update": _checked(DecayUpdateParams, decay_update),
        "cleanup": _checked(CleanupParams, cleanup),
        "patterns_extract": _checked(PatternsExtractParams, patterns_extract),
        "archive_create": _checked(ArchiveCreateParams, archive_create),
    }


def _archive_job(
    rt: Runtime, touched: Callable[[list[str]], Awaitable[None]]
) -> Callable[[ArchiveCreateParams, int], Awaitable[dict[str, Any]]]:
    """archive_create: per full tenant (agent, user, mode, hai id), the rows of the window
    `[at - windowDays, at)` → a compressed archive (never empty, never mixing users), pinned
    to IPFS only encrypted.

    The window ends at the job's time, so a retried or redelivered job rebuilds the same
    archives (same ids: nothing new is inserted), and pins any of them whose pin failed.
    Result: `archives`, the ids of the job's archives (inserted now or by an earlier run);
    `inserted`, how many were new; `pinned`, how many were pinned by this run."""

    async def archive_create(params: ArchiveCreateParams, at: int) -> dict[str, Any]:
        start, end = params.window(at, 7)
        sync = params.syncToIpfs is not False
        agents = params.agents()
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
                    if sync and await pin_if_unpinned(rt, record.archive_id):
                        pinned += 1
        await touched(agents)
        return {"archives": archives, "inserted": inserted, "pinned": pinned}

    return archive_create
