"""The result of each admin operation (`AdminRequest.op`), one model per operation.

`AdminReply.result` stays a JSON object on `memory.admin.v1.replies` rather than a union of
these models: the operations share one reply topic and a reply does not name its
operation, so a union could only be told apart by its keys (`EvalRun` and `JobRecordOut`, for
instance, share none that is required and unique), and a typed `result` would be serialised
with every optional field the admin group leaves out (`eventId`, `skill`, …) as `null`,
changing the bytes on the topic. So the wire keeps the admin group's object, and the caller
types it: `ADMIN_RESULTS[op]` is the model of `op`'s result, which the gateway validates
every admin answer against (`result_of`). Keys are the reference's camelCase; unknown keys
are kept. Times are milliseconds since epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from schemas.requests import AdminOp, AdminReply

R = TypeVar("R", bound="AdminResult")


class AdminResult(BaseModel):
    """Base of every admin result: frozen, unknown keys kept."""

    model_config = ConfigDict(frozen=True, extra="allow")


class PatternsResponse(AdminResult):
    patterns: list[dict[str, Any]]


class PatternResponse(AdminResult):
    pattern: dict[str, Any]


class ValidationResponse(AdminResult):
    valid: bool
    confidence: float
    occurrences: int
    successRate: float
    toolSequence: list[str]


class PromotionResponse(AdminResult):
    skillId: str | None
    promoted: bool
    status: Literal["promoted", "already_promoted", "invalid"]
    validation: ValidationResponse
    skill: dict[str, Any] | None = None


class SkillsResponse(AdminResult):
    skills: list[dict[str, Any]]


class SkillResponse(AdminResult):
    skill: dict[str, Any]


class JobRecordOut(AdminResult):
    """A job record (reference §10.6). `status` is `queued` right after POST /jobs (the
    record appears once the jobs group picks the request up), then running → completed or
    failed; `data` is the job's result."""

    jobId: str
    type: str
    status: Literal["queued", "running", "completed", "failed"]
    params: dict[str, Any]
    createdAt: int
    agentWallet: str | None = None
    completedAt: int | None = None
    attempts: int = 0
    data: dict[str, Any] | None = None
    error: str | None = None
    errorType: str | None = None
    eventId: str | None = None


class JobRecordsResponse(AdminResult):
    """`jobs.list`: job records, newest first."""

    jobs: list[JobRecordOut]


class StatsResponse(AdminResult):
    """reference §13.2 over active rows; times in ms since epoch (null without rows)."""

    agentWallet: str
    userAddress: str | None = None
    totalVectors: int
    totalTranscripts: int
    avgDecayScore: float
    oldestVector: int | None
    newestVector: int | None
    byType: dict[str, int]


class ArchiveSynced(AdminResult):
    """reference §13.3: the archive's CID; `pinned` is true when this call pinned it."""

    ipfsHash: str
    pinned: bool


class EvalRun(AdminResult):
    evalRunId: str
    status: str
    scores: dict[str, Any]
    results: list[dict[str, Any]]


class EvalRuns(AdminResult):
    runs: list[EvalRun]


class MemoryRows(AdminResult):
    """`memory.browse`: stored rows, newest first (`services.groups.admin.browse.row_json`)."""

    rows: list[dict[str, Any]]


class EntityGraph(AdminResult):
    """`graph.browse`: entities (rows of source `entity`) and the relations touching them."""

    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]


class ExportPage(AdminResult):
    """`memory.export`: export lines (`engine.adapters.mongo.export`'s format) and the cursor
    of the next page (None: the export is complete)."""

    lines: list[str]
    next: str | None = None


ADMIN_RESULTS: Mapping[AdminOp, type[AdminResult]] = {
    "patterns.list": PatternsResponse,
    "patterns.get": PatternResponse,
    "patterns.validate": ValidationResponse,
    "patterns.promote": PromotionResponse,
    "skills.list": SkillsResponse,
    "skills.get": SkillResponse,
    "jobs.get": JobRecordOut,
    "jobs.list": JobRecordsResponse,
    "stats": StatsResponse,
    "evals.run": EvalRun,
    "evals.get": EvalRun,
    "evals.list": EvalRuns,
    "archives.sync": ArchiveSynced,
    "memory.browse": MemoryRows,
    "graph.browse": EntityGraph,
    "memory.export": ExportPage,
}
"""The model of each operation's `AdminReply.result`."""


def result_of(reply: AdminReply, model: type[R]) -> R:
    """`reply.result` as `model` (`ValidationError` when it is not one); an absent result
    is validated as `{}`. The caller checks `not_found` and `error` first."""
    return model.model_validate(reply.result or {})
