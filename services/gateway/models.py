"""The gateway's documented request and response shapes (the OpenAPI document).

Request bodies are the reference's loose JSON (reference §1.1, §6.1, §7.1, §7.4), each the
one wire body model of `schemas` the SDK, MCP and the CLI parse with too (issue 33): the
scope alone (`schemas.bodies.ScopeInput`), pre_turn's, post_turn's and remember's
(`ContextInput`, `TurnInput`, `RememberInput`), the layer search's (`LayerSearchInput`), a
transcript's, a knowledge document's and a workflow checkpoint's (`TranscriptInput`,
`KnowledgeInput`, `CheckpointInput`), an item's and a working session's edits
(`ItemPatchInput`, `WorkingPatchInput`), a job's (`JobInput`), an eval run's (`EvalInput`),
a conflict's resolution, a pattern's promotion and a session's compression
(`schemas.operation_input`). The routes take them and pass them on, with the same
refusals: a key of the wrong JSON type is a 400, a number or a time outside its range a 422.
The loop's body (`LoopBody`) names its step; the rest is that step's body, parsed by its
model.

Responses use the reference's camelCase keys. An answer that is a Kafka reply is that
contract's camelCase view (`schemas.camel`: a subclass, no field re-listed); an admin
answer is its operation's result model (`schemas.admin`); the rest (the 202 answers of the
writes, the item and session envelopes) are the gateway's own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.camel import CAMEL
from schemas.requests import ContextItem, ContextReply, ContextUsage, LayerSearchReply

WORKFLOW_VERSION = "compose.agent_memory.v1"


class LooseBody(BaseModel):
    """A request body of the reference's loose JSON: unknown keys are kept."""

    model_config = ConfigDict(frozen=True, extra="allow")


class Answer(BaseModel):
    """A response of the gateway's own (not a contract's view)."""

    model_config = ConfigDict(frozen=True, extra="allow")


# --- request bodies ------------------------------------------------------------------------


class LoopBody(LooseBody):
    """One step of the canonical loop plus that step's body (reference §13.1)."""

    step: str | None = Field(
        default=None, description="pre_turn|context, post_turn|record_turn, remember|save."
    )
    op: str | None = Field(default=None, description="Alias of step.")


# --- responses -----------------------------------------------------------------------------


class Workflow(Answer):
    v: str = WORKFLOW_VERSION
    step: Literal["pre_turn", "post_turn", "remember"]
    next: list[str]


class _Workflowed(BaseModel):
    workflow: Workflow


class ContextItemOut(ContextItem):
    model_config = CAMEL


class ContextUsageOut(ContextUsage):
    model_config = CAMEL


class ContextResponse(ContextReply, _Workflowed):
    """reference §6.6, plus `cached`: the search group's `ContextReply` in camelCase, after
    the loop's `workflow` (bases in this order put it first)."""

    model_config = CAMEL

    # the list of each item's camelCase view (the reply is frozen: never appended to)
    items: list[ContextItemOut] = Field(default_factory=list)  # type: ignore[assignment]
    context_usage: ContextUsageOut | None = None
    error: None = Field(default=None, exclude=True)


class Position(Answer):
    """Where the event landed on the log (to wait for a consumer group's progress)."""

    topic: str
    partition: int
    offset: int

    @classmethod
    def of(cls, at: object) -> Position:
        """The position of a publish (`MemoryClient.publish*`'s answer)."""
        return cls.model_validate(at, from_attributes=True)


class TurnAccepted(Answer):
    """reference §7.1's answer for an asynchronous write: the ids, `accepted: true`, and no
    `stored` / `vectorId` (they are written later by the consumer groups). `visible` is true
    when the caller asked to `wait` and the turn is stored and visible to pre_turn."""

    workflow: Workflow
    success: bool = True
    accepted: bool = True
    visible: bool = False
    eventId: str
    sessionId: str
    threadId: str
    turnId: str
    position: Position | None = None


class RememberedMemory(Answer):
    id: str = Field(description="The fact's item id (GET /items/{id} once it is stored).")
    text: str
    type: str
    retention: str | None = None
    confidence: float
    status: Literal["queued", "stored"] = Field(
        default="queued", description="`stored` once it is visible (with `wait=true`)."
    )


class RememberAccepted(Answer):
    """reference §7.4's answer for an asynchronous write: no `graphSaved`/`vectorSaved`
    (not known yet); `memory.status` is `queued` and `memory.id` is the item id to come."""

    workflow: Workflow
    success: bool = True
    accepted: bool = True
    visible: bool = False
    eventId: str
    memory: RememberedMemory
    position: Position | None = None


class LayerSearchResponse(LayerSearchReply):
    """The search group's `LayerSearchReply` in camelCase (the reference's `{query, layers,
    totals}`: the ranked `items` are the SDK's)."""

    model_config = CAMEL

    error: None = Field(default=None, exclude=True)
    items: list[ContextItem] = Field(default_factory=list, exclude=True)


class SessionResponse(Answer):
    session: dict[str, Any]


class SessionUpdated(Answer):
    success: bool
    session: dict[str, Any]


class Health(Answer):
    status: Literal["ok"] = "ok"
