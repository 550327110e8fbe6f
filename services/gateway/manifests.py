"""Workflow manifests (reference §13.1): static descriptions of how a runtime drives this
gateway — the hot per-turn loop and the durable maintenance, pattern and archive loops —
each naming the real routes it calls, in order. GET /workflows lists them, GET
/workflows/{id} answers one (unknown id ⇒ 404). Registered after `services.gateway.workflows`
so GET /workflows/reliability keeps its own route."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict

from services.gateway.auth import Caller
from services.gateway.errors import ERRORS, NOT_FOUND, ApiError
from services.gateway.limits import StrictJsonRoute
from services.gateway.models import WORKFLOW_VERSION

router = APIRouter(tags=["workflows"], responses=ERRORS, route_class=StrictJsonRoute)

P = "/api/memory"


class WorkflowStep(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    operationId: str
    method: Literal["GET", "POST", "PATCH", "DELETE"]
    path: str
    purpose: str


class WorkflowManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    version: str = WORKFLOW_VERSION
    description: str
    loop: Literal["hot", "durable"]
    tokenPolicy: str
    steps: list[WorkflowStep]


class WorkflowManifests(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    workflows: list[WorkflowManifest]


def _step(operation_id: str, method: str, path: str, purpose: str) -> WorkflowStep:
    return WorkflowStep.model_validate(
        {"operationId": operation_id, "method": method, "path": P + path, "purpose": purpose}
    )


JOB_STATUS = _step(
    "jobs.get", "GET", "/jobs/{jobId}", "Poll the job record until completed or failed."
)

MANIFESTS: tuple[WorkflowManifest, ...] = (
    WorkflowManifest(
        id="agent_memory_loop",
        description="The per-turn loop: assemble a packed memory context before the model "
        "call, record the turn after it, remember explicit facts when the user states them.",
        loop="hot",
        tokenPolicy="Only the packed context enters the prompt; bound it with "
        "budget.maxCharacters (held exactly) and maxItems. Recording and remembering are "
        "asynchronous writes (202) that cost no prompt tokens.",
        steps=[
            _step(
                "context.assemble",
                "POST",
                "/context/assemble",
                "pre_turn: the packed Memory context for the user's message.",
            ),
            _step(
                "turns.record",
                "POST",
                "/turns/record",
                "post_turn: store the turn (transcript, working buffer, session vector, facts).",
            ),
            _step(
                "memory.remember",
                "POST",
                "/remember",
                "Store an explicit fact in the tenant's durable memory.",
            ),
            _step(
                "memory.loop",
                "POST",
                "/loop",
                "One endpoint for the three steps, chosen by `step`.",
            ),
        ],
    ),
    WorkflowManifest(
        id="memory_maintenance_loop",
        description="Keep an agent's memory healthy: consolidate duplicates, refresh decay, "
        "purge what decayed, then check the result.",
        loop="durable",
        tokenPolicy="No model tokens: jobs run in the jobs group, outside any prompt.",
        steps=[
            _step(
                "jobs.consolidate",
                "POST",
                "/jobs",
                "type consolidate: supersede older duplicates per agent and user.",
            ),
            _step(
                "jobs.decayUpdate",
                "POST",
                "/jobs",
                "type decay_update: recompute stored decay scores.",
            ),
            _step(
                "jobs.cleanup",
                "POST",
                "/jobs",
                "type cleanup: delete old, decayed, unpinned rows (unrestricted credential).",
            ),
            JOB_STATUS,
            _step(
                "stats.get",
                "GET",
                "/stats/{agentWallet}",
                "Counts of the agent's active memory after maintenance.",
            ),
        ],
    ),
    WorkflowManifest(
        id="memory_pattern_loop",
        description="Turn repeated tool sequences into skills: recount patterns, review "
        "them, validate and promote the reliable ones.",
        loop="durable",
        tokenPolicy="No model tokens: patterns are counted from recorded tool events.",
        steps=[
            _step(
                "jobs.patternsExtract",
                "POST",
                "/jobs",
                "type patterns_extract: recount patterns from stored transcripts.",
            ),
            JOB_STATUS,
            _step("patterns.list", "GET", "/patterns", "The tenant's validated patterns."),
            _step(
                "patterns.validate",
                "POST",
                "/patterns/{id}/validate",
                "Validation from stored counts (runs, success rate, confidence).",
            ),
            _step(
                "patterns.promote",
                "POST",
                "/patterns/{id}/promote",
                "Promote a valid pattern to a skill (idempotent).",
            ),
            _step("skills.list", "GET", "/skills", "The agent's skills."),
        ],
    ),
    WorkflowManifest(
        id="memory_archive_loop",
        description="Archive a window of older memory per tenant, pin it to IPFS encrypted, "
        "and find it again through the archives layer.",
        loop="durable",
        tokenPolicy="No model tokens to archive; only an archive's summary and topics are "
        "ever searched or packed, never its payload.",
        steps=[
            _step(
                "jobs.archiveCreate",
                "POST",
                "/jobs",
                "type archive_create: compressed archives of the window, per tenant.",
            ),
            JOB_STATUS,
            _step(
                "archives.sync",
                "POST",
                "/archives/{id}/sync",
                "Pin one archive to IPFS, encrypted (needs Pinata and an encryption key).",
            ),
            _step(
                "layers.search",
                "POST",
                "/layers/search",
                'Find archives by meaning: layers ["archives"].',
            ),
        ],
    ),
)
"""Every manifest, in the reference's order."""


@router.get("/workflows", response_model=WorkflowManifests)
async def list_workflows(caller: Caller) -> WorkflowManifests:
    """`{workflows}`: every manifest."""
    return WorkflowManifests(workflows=list(MANIFESTS))


@router.get("/workflows/{id}", response_model=WorkflowManifest, responses=NOT_FOUND)
async def get_workflow(
    id: Annotated[str, Path(min_length=1, max_length=100)], caller: Caller
) -> WorkflowManifest:
    """One manifest: `{id, version, description, loop, tokenPolicy, steps}`."""
    for manifest in MANIFESTS:
        if manifest.id == id:
            return manifest
    raise ApiError(404, f"unknown workflow {id!r}")
