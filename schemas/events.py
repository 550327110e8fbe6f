"""Events: facts that happened, named in the past tense. Each carries `event_id`,
`occurred_at` (timezone-aware; derived rows take their timestamps from it) and `schema_version`.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from schemas.bounds import EpochMs, TokenCount, ValueOutOfRange, out_of_range, within_time_range
from schemas.jobs import JobType, check_job_params
from schemas.limits import INT64_MAX, INT64_MIN, DocumentObject
from schemas.scope import Id, Scope, ScopeError

MAX_CONTENT_CHARS = 32_000
"""Upper bound on one message's content."""
MAX_MESSAGES = 200
"""Upper bound on the messages of one turn (tool events included)."""
MAX_TOOL_CALLS = 64
"""Upper bound on the tool calls of one message."""
MAX_LAYERS = 16
"""Upper bound on the layer names of one `MemoryChanged`."""
MAX_VECTOR_TARGETS = 2_000
"""Texts one `EmbeddingRequested` may ask vectors for (a batch of turns of one thread)."""
MAX_DOCUMENT_CHARS = 200_000
"""Upper bound on one knowledge document (about 160 chunks of 1,400 characters)."""
MAX_GOAL_CHARS = 4_000
"""Upper bound on a workflow checkpoint's goal (the stored goal is clipped to 600)."""

Role = Literal["user", "assistant", "system", "tool"]


def new_event_id() -> str:
    """A random event id (uuid4 hex)."""
    return uuid.uuid4().hex


def utc_now() -> datetime:
    """Wall-clock time, timezone-aware; used only where an event is born."""
    return datetime.now(UTC)


class Contract(BaseModel):
    """Base of every wire contract: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Event(Contract):
    """`occurred_at` lies within `schemas.bounds.TIME_RANGE` (1970..9999): rows derived from
    the event take their millisecond timestamps from it. No float of an event is NaN or
    infinite."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    event_id: Id = Field(default_factory=new_event_id, min_length=1, max_length=64)
    occurred_at: Annotated[AwareDatetime, AfterValidator(within_time_range)] = Field(
        default_factory=utc_now
    )
    schema_version: Literal[1] = 1


MAX_SPEAKER_CHARS = 120
"""Upper bound on a message's speaker name."""


class ToolCall(Contract):
    name: str = Field(min_length=1, max_length=200)
    args: DocumentObject = Field(default_factory=dict)


class Message(Contract):
    """One message of a turn. `timestamp` is milliseconds since epoch. `name` is the
    speaker's name when the caller knows it (as in the chat-completions `name` field):
    "Melanie" for a user who is a named person; None leaves the speaker to its role, or to a
    leading "Name: " in `content` (`engine.ingest.speakers`). `raw` is the caller's own form
    of the message (an agent framework's item as JSON text, say), kept verbatim with the
    transcript and returned by transcript reads so the caller can rebuild its history
    exactly; the memory layers never show, embed or extract it."""

    role: Role
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    timestamp: EpochMs
    name: str | None = Field(default=None, min_length=1, max_length=MAX_SPEAKER_CHARS)
    tool_calls: list[ToolCall] | None = Field(default=None, max_length=MAX_TOOL_CALLS)
    raw: str | None = Field(default=None, min_length=1, max_length=MAX_CONTENT_CHARS)


UNKNOWN_STATUS = "unknown"
"""The status of a tool call whose outcome the caller did not report."""


class ToolEvent(Contract):
    """A tool call made during the turn, with its outcome (`status`), for patterns.

    `status` is the caller's word for the outcome: a success word (`completed`, `ok`, …,
    `engine.ingest.outcomes.SUCCESS_STATUSES`), `unknown` (the default: a call reported
    without an outcome moves no success rate), or anything else, which counts as a failure.
    `timestamp` is milliseconds since epoch."""

    name: str = Field(min_length=1, max_length=200)
    args: DocumentObject = Field(default_factory=dict)
    status: str = Field(default=UNKNOWN_STATUS, min_length=1, max_length=64)
    result: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    timestamp: EpochMs


class TurnRecorded(Event):
    """post_turn: what happened in one agent turn. Keyed on the topic by `session_id`.

    `turn_id` is the idempotency key: a redelivered or replayed event with the same
    `turn_id` changes nothing the second time.
    """

    scope: Scope
    session_id: Id = Field(min_length=1, max_length=512)
    thread_id: Id = Field(min_length=1, max_length=512)
    turn_id: Id = Field(min_length=1, max_length=128)
    context_id: Id | None = Field(default=None, max_length=128)
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    tool_events: list[ToolEvent] = Field(default_factory=list, max_length=MAX_MESSAGES)
    summary: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    total_tokens: TokenCount = 0
    model_used: str = Field(default="external", max_length=200)
    context_window: TokenCount = 0
    metadata: DocumentObject = Field(default_factory=dict)


_MEMORY_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,63}")


def memory_type_problem(value: str) -> str | None:
    """What makes `value` unusable as a remembered fact's type, or None (`MemoryType`)."""
    if _MEMORY_TYPE.fullmatch(value):
        return None
    return "must be one word of at most 64 letters, digits or _ . : -, starting with a letter"


def _memory_type(value: str) -> str:
    problem = memory_type_problem(value)
    if problem is not None:
        raise PydanticCustomError("memory_type", problem)
    return value


MemoryType = Annotated[str, AfterValidator(_memory_type)]
"""A remembered fact's `type` (issue 33: checked the same by the gateway, the SDK, the CLI and
MCP, whose tool offers the fact types only): a fact type (`preference`, …), the reference's
`explicit_save`, or the caller's own word (`step_learning`); never an operator-like `$where`,
a space or markup."""


class MemoryRemembered(Event):
    """remember: an explicit fact the agent was asked to keep."""

    scope: Scope
    content: str = Field(min_length=1, max_length=4_000)
    type: str = Field(default="explicit_save", max_length=64)
    """Checked at the edge (`MemoryType`); events already in the log are read as they are."""
    retention: str | None = Field(default=None, max_length=32)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    conflict_policy: str | None = Field(default=None, max_length=32)
    memory_scope: str | None = Field(default=None, max_length=64)
    metadata: DocumentObject = Field(default_factory=dict)


class MemoryChanged(Event):
    """Published by a writer after its write is durable; drives cache invalidation."""

    scope: Scope
    layers: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=1, max_length=MAX_LAYERS
    )
    cause_event_id: Id | None = Field(default=None, max_length=64)
    producer: str = Field(min_length=1, max_length=64)


class VectorTarget(Contract):
    """One stored text whose vector is wanted: the memory row `vector_id` (pending until
    filled); `turn_id` for a turn's row (its messages are embedded too). `session_id` and
    `working_session_id` are no longer read (a turn's vector is written on its row only,
    issue 29): a request published by an older build, which named the transcript and
    working buffer that kept a copy, still parses."""

    vector_id: Id = Field(min_length=1, max_length=128)
    text: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    turn_id: Id | None = Field(default=None, max_length=128)
    session_id: Id | None = Field(default=None, max_length=512)
    working_session_id: Id | None = Field(default=None, max_length=512)


class EmbeddingRequested(Event):
    """Texts stored without their vectors (`embedding.deferred`), for the `embeddings`
    group. Keyed by the thread; published after the rows are durable."""

    scope: Scope
    thread_id: Id | None = Field(default=None, max_length=512)
    model: str = Field(min_length=1, max_length=200)
    targets: list[VectorTarget] = Field(min_length=1, max_length=MAX_VECTOR_TARGETS)


FactType = Literal["preference", "identity", "context", "skill", "relationship", "event"]


class FactItem(Contract):
    text: str = Field(min_length=1, max_length=1_000)
    type: FactType
    confidence: float = Field(ge=0.0, le=1.0)
    slot: str | None = Field(default=None, max_length=120)


class EntityItem(Contract):
    name: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=64)
    summary: str = Field(default="", max_length=1_000)


class RelationItem(Contract):
    """A link between two entities: typed (`WORKS_AT`, …) or untyped (`MENTIONS`,
    `RELATED`); `evidence` is the sentence that states it ("" when none was kept)."""

    source: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=64)
    target: str = Field(min_length=1, max_length=200)
    evidence: str = Field(default="", max_length=1_000)


class FactsExtracted(Event):
    """What the extractor read in one turn. Keyed by agent|user; `occurred_at` is the
    turn's, so stored facts carry the time they were said."""

    scope: Scope
    turn_id: Id = Field(min_length=1, max_length=128)
    session_id: Id = Field(min_length=1, max_length=512)
    extractor: str = Field(min_length=1, max_length=200)
    facts: list[FactItem] = Field(default_factory=list, max_length=50)
    entities: list[EntityItem] = Field(default_factory=list, max_length=50)
    relations: list[RelationItem] = Field(default_factory=list, max_length=50)


class JobRequested(Event):
    """A maintenance job to run (`memory.jobs.v1`, keyed by type). `job_id` is the
    idempotency key: a job id that already finished is not run again. `params` are the
    job type's (`schemas.jobs`): a request with a parameter the job does not take, or one
    out of its range, is not a valid request (a consumer dead-letters it)."""

    job_id: Id = Field(default_factory=new_event_id, min_length=1, max_length=128)
    type: JobType
    params: DocumentObject = Field(default_factory=dict)

    @model_validator(mode="after")
    def _params_of_its_type(self) -> JobRequested:
        try:
            check_job_params(self.type, self.params)
        except ValueOutOfRange as exc:
            raise out_of_range(str(exc)) from None
        except ScopeError as exc:
            raise PydanticCustomError("job_params", "{reason}", {"reason": str(exc)}) from None
        return self


KnowledgeFormat = Literal["file", "url", "paste"]


class KnowledgeSubmitted(Event):
    """A knowledge document to index (reference §14): cut into overlapping windows of 1,400
    characters, each stored as an embedded `knowledge` row of `scope`. A scope without
    `userAddress` holds the agent's own (genesis) knowledge, one with a user that user's
    workspace; the thread is ignored (knowledge is not per thread). Keyed by agent|user.

    Idempotent: a row's id is derived from the tenant, the document (`key`, else `uri`, else
    the content's hash) and the chunk, so a redelivered or re-submitted document stores
    nothing new."""

    scope: Scope
    content: str = Field(min_length=1, max_length=MAX_DOCUMENT_CHARS)
    key: Id | None = Field(default=None, min_length=1, max_length=512)
    uri: str | None = Field(default=None, min_length=1, max_length=2_048)
    source_format: KnowledgeFormat = "paste"
    metadata: DocumentObject = Field(default_factory=dict)


CheckpointKind = Literal["step_learning", "workflow_evaluation", "context_compaction"]


class WorkflowMessage(Contract):
    """One message of a workflow run (only user/assistant/system ones are stored)."""

    role: Role
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)


Step = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)] | Annotated[str, Field(max_length=200)]


class WorkflowCheckpointRecorded(Event):
    """A checkpoint of a workflow run (reference §14): a step's learning, the run's
    evaluation or a mid-run context compaction, stored as a `session` row. `scope` is the
    workflow's: `agentWallet` = the workflow wallet, `userAddress` = the run's user,
    `threadId` (alias `runId`) = the run id (required); workflow memory has no mode, so a
    `local` scope is refused. `agent` names the agent whose reliability the row counts for;
    `quality_score` is the evaluator's (its range is the evaluator's), `success` None means
    "not judged". Keyed by workflow wallet|run.

    Idempotent: the row id is derived from every field but the event's own id and time, so
    a redelivered event (or the same checkpoint sent twice) is one row."""

    scope: Scope
    agent: Id = Field(min_length=1, max_length=200)
    type: CheckpointKind
    messages: list[WorkflowMessage] = Field(default_factory=list, max_length=MAX_MESSAGES)
    step: Step | None = None
    goal: str | None = Field(default=None, max_length=MAX_GOAL_CHARS)
    success: bool | None = None
    quality_score: float | None = Field(default=None, allow_inf_nan=False)

    @model_validator(mode="after")
    def _a_run_with_content(self) -> WorkflowCheckpointRecorded:
        if self.scope.thread_id is None:
            raise ValueError("runId (threadId) is required")
        if self.scope.mode == "local":
            raise ValueError("workflow memory has no local mode")
        said = any(m.role != "tool" and m.content.strip() for m in self.messages)
        if not said and not (self.goal or "").strip():
            raise ValueError("a checkpoint needs a user/assistant/system message or a goal")
        return self
