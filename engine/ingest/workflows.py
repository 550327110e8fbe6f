"""Workflow memory (reference §14): checkpoints as `session` rows, and agent reliability.

A workflow run stores its checkpoints (a step's learning, the run's evaluation, a mid-run
context compaction) as `session` memory rows of the workflow's wallet: user = the run's
user, thread = the run id, no mode (so global reads see them). `reliability` aggregates the
stored step learnings and evaluations of one agent; it is pure, the caller reads the rows.

Reliability counts graded runs: a checkpoint without a success value was not judged, so it
is not a failed run (the reference divided by every row, so a step learning stored without
`success` lowered the agent's rate).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from engine.errors import InputRejected
from engine.ports import Embedder, MemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from schemas.events import WorkflowCheckpointRecorded
from schemas.ids import h32

CheckpointType = Literal["step_learning", "workflow_evaluation", "context_compaction"]
CHECKPOINT_TYPES: tuple[str, ...] = get_args(CheckpointType)
RELIABILITY_TYPES = ("step_learning", "workflow_evaluation")
CONTENT_ROLES = ("user", "assistant", "system")
CONTENT_MESSAGES = 6
MESSAGE_CHARS = 600
CONTENT_CHARS = 1800
GOAL_CHARS = 600

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class WorkflowMessage:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class WorkflowCheckpoint:
    """One checkpoint of a workflow run. `quality_score` is the evaluator's score (the
    reference leaves its range to the evaluator); `success` None means "not judged"."""

    workflow_wallet: str
    run_id: str
    user_id: str | None
    agent: str
    type: CheckpointType
    messages: tuple[WorkflowMessage, ...] = ()
    step: str | int | None = None
    goal: str | None = None
    success: bool | None = None
    quality_score: float | None = None

    def __post_init__(self) -> None:
        if self.type not in CHECKPOINT_TYPES:
            raise InputRejected(f"checkpoint type must be one of {CHECKPOINT_TYPES}")
        if not self.workflow_wallet or not self.run_id:
            raise InputRejected("workflow_wallet and run_id are required")


@dataclass(frozen=True, slots=True)
class Reliability:
    """`runs` rows counted; `graded` those of them with a success value (`success` a
    boolean, "true" or "false"); `success_rate` in [0, 1] the share of graded rows that
    succeeded (0.0 when none is graded); `avg_quality` the mean numeric quality score of
    the counted rows (0.0 when none has one)."""

    runs: int
    graded: int
    success_rate: float
    avg_quality: float


def checkpoint_content(messages: Sequence[WorkflowMessage]) -> str:
    """The last 6 non-blank user/assistant/system messages as `role: text` lines (text with
    whitespace runs collapsed, so a message cannot forge a line; at most 600 characters
    each), at most 1800 characters in all."""
    picked = [
        (m.role, _SPACES.sub(" ", m.content).strip())
        for m in messages
        if m.role in CONTENT_ROLES and m.content.strip()
    ]
    lines = [f"{role}: {text[:MESSAGE_CHARS]}" for role, text in picked[-CONTENT_MESSAGES:]]
    return "\n".join(lines)[:CONTENT_CHARS]


def checkpoint_id(checkpoint: WorkflowCheckpoint) -> str:
    """Deterministic row id: the same checkpoint (every field) always maps to one row."""
    payload = [
        checkpoint.workflow_wallet,
        checkpoint.user_id,
        checkpoint.run_id,
        checkpoint.agent,
        checkpoint.type,
        checkpoint.step,
        checkpoint.goal,
        checkpoint.success,
        checkpoint.quality_score,
        [[m.role, m.content] for m in checkpoint.messages],
    ]
    return "wf_" + h32(json.dumps(payload))


async def record_checkpoint(
    memory: MemoryStore, embedder: Embedder, checkpoint: WorkflowCheckpoint, at: int
) -> str:
    """Store the checkpoint as a `session` row (created at `at`, ms since epoch) and return
    its id; a checkpoint already stored is neither embedded nor written again.

    Content is `checkpoint_content(messages)`, or `goal: <goal>` when no message qualifies;
    raises `InputRejected` when both are empty (nothing to embed)."""
    content = checkpoint_content(checkpoint.messages)
    goal = _SPACES.sub(" ", checkpoint.goal or "").strip()[:GOAL_CHARS]
    if not content:
        if not goal:
            raise InputRejected("a checkpoint needs a message or a goal")
        content = f"goal: {goal}"
    vector_id = checkpoint_id(checkpoint)
    if await memory.exists(vector_id):
        return vector_id
    [embedding] = await embedder.embed([content], "document")
    metadata: dict[str, Any] = {
        "type": checkpoint.type,
        "workflow_wallet": checkpoint.workflow_wallet,
        "run_id": checkpoint.run_id,
        "user_id": checkpoint.user_id,
        "agent": checkpoint.agent,
        "step": checkpoint.step,
        "success": checkpoint.success,
        "qualityScore": checkpoint.quality_score,
    }
    if goal:
        metadata["goal"] = goal
    await memory.insert_if_absent(
        MemoryRow(
            vector_id=vector_id,
            scope=ScopeFields(
                agent_wallet=checkpoint.workflow_wallet,
                user_address=checkpoint.user_id,
                thread_id=checkpoint.run_id,
                mode=None,
                hai_id=None,
            ),
            content=content,
            embedding=embedding,
            embedding_model=embedder.model,
            source="session",
            created_at=at,
            metadata=metadata,
        )
    )
    return vector_id


def _quality(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _outcome(value: object) -> bool | None:
    """The success value of a stored row: True for True or "true", False for False or
    "false", None (not graded) for anything else."""
    # identity, not `in (True, "true")`: 1 and 1.0 compare equal to True
    if value is True or value == "true":
        return True
    if value is False or value == "false":
        return False
    return None


def reliability(rows: Sequence[MemoryRow], agent: str, last: int = 50) -> Reliability:
    """Reliability of `agent` over its newest `last` rows (by `created_at`, then id) whose
    `metadata.type` is step_learning or workflow_evaluation and `metadata.agent` is `agent`.

    Graded = rows whose `success` is True, False, "true" or "false" (`_outcome`); success
    rate = rows whose `success` is True or "true" ÷ graded rows, so a row without a success
    value counts as a run but neither as a success nor as a failure. Average quality = mean
    of the numeric `qualityScore`s of every counted row (booleans and non-finite values are
    not numbers). No rows, or no graded row, ⇒ a rate of 0.0."""
    mine = [
        row
        for row in rows
        if row.metadata.get("type") in RELIABILITY_TYPES and row.metadata.get("agent") == agent
    ]
    mine.sort(key=lambda row: (row.created_at, row.vector_id), reverse=True)
    mine = mine[: max(last, 0)]
    outcomes = [o for row in mine if (o := _outcome(row.metadata.get("success"))) is not None]
    scores = [q for row in mine if (q := _quality(row.metadata.get("qualityScore"))) is not None]
    return Reliability(
        runs=len(mine),
        graded=len(outcomes),
        success_rate=sum(outcomes) / len(outcomes) if outcomes else 0.0,
        avg_quality=sum(scores) / len(scores) if scores else 0.0,
    )


async def read_reliability(
    memory: MemoryStore, where: TenantFilter, agent: str, last: int = 50
) -> Reliability:
    """`reliability` of `agent` over the active `session` rows `where` admits (one tenant:
    the workflow wallet and the runs' user; every run of it, whatever the filter's thread)."""
    rows = await memory.active_rows(where, sources=["session"])
    return reliability(rows, agent, last)


def checkpoint_of(event: WorkflowCheckpointRecorded) -> WorkflowCheckpoint:
    """The checkpoint of an event (the contract guarantees the run id)."""
    scope = event.scope
    return WorkflowCheckpoint(
        workflow_wallet=scope.agent_wallet,
        run_id=scope.thread_id or "",
        user_id=scope.user_address,
        agent=event.agent,
        type=event.type,
        messages=tuple(WorkflowMessage(m.role, m.content) for m in event.messages),
        step=event.step,
        goal=event.goal,
        success=event.success,
        quality_score=event.quality_score,
    )
