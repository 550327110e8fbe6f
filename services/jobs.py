"""jobs group: `JobRequested` → run the maintenance job (bounded retries, a `memory_jobs`
record that ends `completed` or `failed` with its error) → invalidate what it touched.

A job's time is its request's `occurred_at` (the scheduler sets it to the fire time): windows
that must come out the same when the job runs again (archives, pattern recounts) end there,
not at the clock. Day-valued parameters are checked before any work (`days_param`): an absurd
value fails the job with a clear error instead of crashing it (§16.18). Every parameter a job
reads is honoured (`dateRange`/`timeRange`, `syncToIpfs`, `batchSize`, ...: `JOB_PARAMS`), and
one it would ignore fails the job with an error naming it."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from faststream.kafka import KafkaBroker

from engine import maintenance
from engine.archives import build_archive, embed_archive, tenant_groups
from engine.context import invalidate
from engine.errors import InputRejected
from engine.jobs import MAX_DAYS, JobFunction, days_ms, days_param, run_job
from engine.patterns import executions_from_transcript
from engine.scoping import GLOBAL_NAMESPACE, TenantFilter
from schemas import topics
from schemas.events import JobRequested
from schemas.inputs import occurred_at_of, to_ms
from schemas.scope import Scope, ScopeError
from services.archive_pins import pin_if_unpinned
from services.consumers import on_event
from services.runtime import Runtime

GROUP = "jobs"


def _now() -> int:
    return int(time.time() * 1000)


COMMON_PARAMS = frozenset({"agentWallet", "agentWallets", "execution"})
"""Accepted by every job (`execution`, the reference's inline|temporal runner choice, is
accepted and ignored: every job here is run by the jobs group)."""

JOB_PARAMS: dict[str, frozenset[str]] = {
    "consolidate": frozenset({"batchSize"}),
    "decay_update": frozenset({"halfLifeDays", "batchSize"}),
    "cleanup": frozenset({"olderThanDays"}),
    "patterns_extract": frozenset({"windowDays", "dateRange", "timeRange"}),
    "archive_create": frozenset({"windowDays", "dateRange", "timeRange", "compress", "syncToIpfs"}),
}
"""The parameters each job reads (REFERENCE §10.6), besides `COMMON_PARAMS`. Any other
parameter fails the job with an error naming it, instead of being silently ignored."""


def check_params(job_type: str, params: Mapping[str, Any]) -> None:
    """`InputRejected` naming the parameters `job_type` does not read, and the values that
    cannot be honoured: `compress: false` (archives are always compressed) and
    `confidenceThreshold` (pattern validation thresholds are the server's, REFERENCE §9.2 and
    §16.19: never the caller's)."""
    allowed = COMMON_PARAMS | JOB_PARAMS.get(job_type, frozenset())
    unknown = sorted(set(params) - allowed)
    if "confidenceThreshold" in unknown:
        raise InputRejected(
            "confidenceThreshold is not accepted: pattern validation thresholds are the "
            "server's (executions >= 2, success >= 0.55, confidence >= 0.2)"
        )
    if unknown:
        raise InputRejected(
            f"{job_type} does not take {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}"
        )
    if params.get("compress", True) is not True:
        raise InputRejected("compress must be true (archives are always compressed)")
    if not isinstance(params.get("syncToIpfs", True), bool):
        raise InputRejected("syncToIpfs must be true or false")


def batch_param(params: Mapping[str, Any], default: int = 500) -> int:
    """`batchSize`: rows written per bulk request, 1..10,000."""
    value = params.get("batchSize")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
        raise InputRejected(f"batchSize must be a whole number from 1 to 10000, not {value!r}")
    return value


def window(params: Mapping[str, Any], at: int, default_days: float) -> tuple[int, int]:
    """`[start, end)` in ms: `dateRange` (alias `timeRange`) `{start, end}` (ISO-8601 or ms
    since epoch) when given, else the `windowDays` (default `default_days`) before the job's
    time `at`. Both at once, a range that is not an object of two times, or one that ends
    before it starts, raise `InputRejected`."""
    given = [name for name in ("dateRange", "timeRange") if params.get(name) is not None]
    if not given:
        return at - days_ms(days_param(params, "windowDays", default_days)), at
    if len(given) > 1 or params.get("windowDays") is not None:
        raise InputRejected("give one of windowDays, dateRange or timeRange")
    span = params[given[0]]
    if not isinstance(span, Mapping) or set(span) != {"start", "end"}:
        raise InputRejected(f"{given[0]} must be an object with start and end")
    try:
        start, end = (occurred_at_of({"occurredAt": span[k]}) for k in ("start", "end"))
    except ScopeError:
        raise InputRejected(f"{given[0]} start and end must be ISO-8601 times or ms") from None
    if start is None or end is None or not start < end:
        raise InputRejected(f"{given[0]} must start before it ends")
    if to_ms(end) - to_ms(start) > days_ms(MAX_DAYS):
        raise InputRejected(f"{given[0]} is longer than {MAX_DAYS:g} days")
    return to_ms(start), to_ms(end)


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
        batch = batch_param(params)
        agents = (
            _agents(params)
            if params.get("agentWallet") or params.get("agentWallets")
            else (await rt.maintenance.agents())
        )
        done = await maintenance.decay_update(
            rt.memory,
            rt.maintenance,
            agents=agents,
            now=_now(),
            half_life_days=half_life,
            batch=batch,
        )
        await touched(agents)
        return {"updated": done.updated, "avgDecayScore": round(done.average, 6)}

    async def cleanup(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        days = days_param(params, "olderThanDays", 90)
        deleted = await maintenance.cleanup(rt.maintenance, now=_now(), older_than_days=days)
        await rt.search.cache.bump([GLOBAL_NAMESPACE], rt.search.policy.namespace_ttl_seconds)
        return {"deleted": deleted}

    async def patterns_extract(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        since, until = window(params, at, 1)
        agents = _agents(params)
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

    functions: dict[str, JobFunction] = {
        "consolidate": consolidate,
        "decay_update": decay_update,
        "cleanup": cleanup,
        "patterns_extract": patterns_extract,
        "archive_create": archive_create,
    }
    return {name: _checked(name, function) for name, function in functions.items()}


def _checked(job_type: str, function: JobFunction) -> JobFunction:
    """`function` behind `check_params`: a parameter it would ignore fails the job first."""

    async def run(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        check_params(job_type, params)
        return await function(params, at)

    return run


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

    async def archive_create(params: Mapping[str, Any], at: int) -> dict[str, Any]:
        start, end = window(params, at, 7)
        sync = params.get("syncToIpfs", True)
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
                    if sync and await pin_if_unpinned(rt, record.archive_id):
                        pinned += 1
        await touched(agents)
        return {"archives": archives, "inserted": inserted, "pinned": pinned}

    return archive_create
