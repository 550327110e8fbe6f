"""Maintenance jobs, stats and evals (reference §10.6, §12, §13.2).

* POST /jobs checks the parameters against the job's own (`schemas.jobs`: a parameter the
  job does not take is 400, one out of its range 422, before anything is queued), publishes a
  `JobRequested` to `memory.jobs.v1` and answers 202 with the queued record (`status:
  "queued"`); the jobs group runs it (always asynchronously: the reference's
  inline execution inside the HTTP request, §16.29, is not offered). GET /jobs/{jobId} reads
  the record, 404 until the jobs group has picked the request up. A credential confined to
  one agent may run and read jobs only for that agent, and never `cleanup` (it spans every
  tenant); one confined to a user may not use jobs at all (a job spans the agent's users).
* GET /stats/{agentWallet}: counts over the agent's active rows (`userAddress` narrows them
  to one user); no content.
* Evals are run, stored and listed by the admin group. Runs are stored per agent, so
  listing and reading them needs a credential not confined to one user.
* POST /archives/{id}/sync pins one archive of the agent to IPFS, encrypted, exactly as the
  `archive_create` job does (the admin group pins it): 400 when pinning is not configured,
  404 for a missing archive or another agent's; an archive pinned already answers its CID
  with `pinned: false`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from schemas.admin import ArchiveSynced, EvalRun, EvalRuns, JobRecordOut, StatsResponse
from schemas.bodies import ScopeInput
from schemas.eval_input import EvalInput
from schemas.ids import to_ms
from schemas.job_input import JobInput
from schemas.jobs import job_agents
from schemas.scope import Scope
from services.gateway.auth import Caller
from services.gateway.deps import (
    AgentQuery,
    Client,
    admin_result,
    at_most,
    input_scope,
    query_scope,
)
from services.gateway.errors import ERRORS, NOT_FOUND, ApiError
from services.gateway.limits import StrictJsonRoute

router = APIRouter(tags=["operations"], responses=ERRORS, route_class=StrictJsonRoute)

ARCHIVE_SYNC_TIMEOUT_SECONDS = 30.0
"""Pinning waits for Pinata (up to its own 10 s timeout)."""
EVAL_TIMEOUT_SECONDS = 60.0
"""An eval runs one search per test case: it may take longer than a single read."""


@router.post("/jobs", response_model=JobRecordOut, status_code=202)
async def create_job(body: JobInput, client: Client, caller: Caller) -> JobRecordOut:
    """Queue a maintenance job: the record with `status: "queued"` and its `jobId`."""
    agents = body.agents()
    if not caller.operator:
        if body.type == "cleanup":
            raise ApiError(403, "cleanup spans every tenant: it needs an operator credential")
        caller.agent_wide()
        for agent in agents:
            caller.allow_agent(agent)
    event = body.requested(None if caller.operator else caller.agent)
    await client.publish_job(event)
    agents = job_agents(event.params)
    return JobRecordOut(
        jobId=event.job_id,
        type=event.type,
        status="queued",
        params=event.params,
        createdAt=to_ms(event.occurred_at),
        agentWallet=agents[0] if len(agents) == 1 else None,
        eventId=event.event_id,
    )


@router.get("/jobs/{jobId}", response_model=JobRecordOut, responses=NOT_FOUND)
async def get_job(
    job_id: Annotated[str, Path(alias="jobId", min_length=1, max_length=128)],
    client: Client,
    caller: Caller,
    agent_wallet: AgentQuery = None,
) -> JobRecordOut:
    """The job record (running, completed with `data`, or failed with `error`). With
    `agentWallet` (or a token naming an agent) only a job for that agent is found."""
    agent = caller.agent_or(agent_wallet)
    scope = Scope.parse({"agentWallet": agent}) if agent is not None else None
    reply = await client.admin("jobs.get", scope, id=job_id)
    return admin_result(reply, JobRecordOut)


@router.get("/stats/{agentWallet}", response_model=StatsResponse)
async def stats(
    agent_wallet: Annotated[str, Path(alias="agentWallet", min_length=1, max_length=256)],
    client: Client,
    caller: Caller,
    user_address: Annotated[str | None, Query(alias="userAddress", max_length=256)] = None,
) -> StatsResponse:
    """`{totalVectors, totalTranscripts, avgDecayScore, oldestVector, newestVector, byType}`
    over active rows (`byType`: rows per source)."""
    scope = query_scope(caller, agent_wallet, user_address)
    reply = await client.admin("stats", scope)
    return admin_result(reply, StatsResponse)


@router.post("/evals/runs", response_model=EvalRun)
async def run_eval(body: EvalInput, client: Client, caller: Caller) -> EvalRun:
    """Run and store a retrieval eval (reference §12): `{evalRunId, status, scores, results,
    …}`. Scope aliases are honoured (the reference ignored them, §16.28)."""
    scope = input_scope(caller, body)
    body.cases()  # none is a 400 here, before the admin group is asked
    reply = await client.admin(
        "evals.run", scope, body=body.wire(scope), timeout=EVAL_TIMEOUT_SECONDS
    )
    return admin_result(reply, EvalRun)


@router.get("/evals/runs", response_model=EvalRuns)
async def list_evals(
    client: Client,
    caller: Caller,
    agent_wallet: AgentQuery = None,
    limit: Annotated[int, Query(ge=1, description="Default 20, at most 100 (lowered to it).")] = 20,
) -> EvalRuns:
    """The agent's stored runs, newest first: `{runs}`."""
    caller.agent_wide()
    scope = query_scope(caller, agent_wallet)
    reply = await client.admin("evals.list", scope, limit=at_most(limit, 20, 100))
    return admin_result(reply, EvalRuns)


@router.get("/evals/runs/{id}", response_model=EvalRun, responses=NOT_FOUND)
async def get_eval(
    id: Annotated[str, Path(min_length=1, max_length=200)],
    client: Client,
    caller: Caller,
    agent_wallet: AgentQuery = None,
) -> EvalRun:
    """One stored run of the agent (another agent's run is 404)."""
    caller.agent_wide()
    scope = query_scope(caller, agent_wallet)
    reply = await client.admin("evals.get", scope, id=id)
    return admin_result(reply, EvalRun)


@router.post("/archives/{id}/sync", response_model=ArchiveSynced, responses=NOT_FOUND)
async def sync_archive(
    id: Annotated[str, Path(min_length=1, max_length=200)],
    body: ScopeInput,
    client: Client,
    caller: Caller,
) -> ArchiveSynced:
    """Pin the agent's archive to IPFS, encrypted: `{ipfsHash, pinned}`. With
    `userAddress` only that user's archive is found."""
    scope = input_scope(caller, body)
    reply = await client.admin(
        "archives.sync", scope.tenant(), id=id, timeout=ARCHIVE_SYNC_TIMEOUT_SECONDS
    )
    return admin_result(reply, ArchiveSynced)
