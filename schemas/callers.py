"""The bodies of the other callers sharing the store (reference §14) as one model each:
`KnowledgeInput` (a knowledge document; `submitted` makes the `KnowledgeSubmitted`) and
`CheckpointInput` (a workflow checkpoint; `recorded` makes the `WorkflowCheckpointRecorded`).
The loose rules and the refusals are `schemas.bodies`'; a checkpoint's messages are a turn's
(`schemas.turn_input.MessageInput`). `knowledge_submitted` and `checkpoint_recorded` serve
the callers that hold a plain body (tools, tests). Times are milliseconds since epoch.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, get_args

from pydantic import AliasChoices, BeforeValidator, Field

from schemas.bodies import (
    OCCURRED_AT,
    SCOPE_ALIASES,
    Alias,
    LooseId,
    OccurredAt,
    Refused,
    ScopeInput,
    Text,
    parse_body,
    within_message_limit,
)
from schemas.events import (
    MAX_DOCUMENT_CHARS,
    MAX_GOAL_CHARS,
    MAX_MESSAGES,
    CheckpointKind,
    KnowledgeFormat,
    KnowledgeSubmitted,
    WorkflowCheckpointRecorded,
    WorkflowMessage,
)
from schemas.ids import event_time
from schemas.limits import INT64_MAX, INT64_MIN
from schemas.scope import MAX_ID_CHARS, Id, Scope, ScopeError
from schemas.turn_input import MessageInput

KNOWLEDGE_FORMATS: tuple[str, ...] = get_args(KnowledgeFormat)
CHECKPOINT_KINDS: tuple[str, ...] = get_args(CheckpointKind)
MAX_STEP_CHARS = 200
WALLET_KEYS = ("agentWallet", "agent_id", "agent_wallet", "workflowWallet", "workflow_wallet")
"""The workflow wallet's names in the reference's workflow calls, first present wins."""


def _text_or_absent(value: object) -> object:
    """A document's content: anything but a string is absent (reference §0 `str()`)."""
    return value if isinstance(value, str) else None


def _one_of(kinds: tuple[str, ...]) -> BeforeValidator:
    """A name out of `kinds` (trimmed; blank is absent), else refused naming them."""

    def check(value: object) -> object:
        name = value.strip() or None if isinstance(value, str) else value
        if name is not None and name not in kinds:
            raise Refused(f"must be one of {', '.join(kinds)}")
        return name

    return BeforeValidator(check)


def _step(value: object) -> object:
    """A step: a whole number (int64) or a string (trimmed, blank is absent)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise Refused("must be a number or a string")
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise Refused(f"must be from {INT64_MIN} to {INT64_MAX}", out_of_range=True)
        return value
    text = value.strip()
    if len(text) > MAX_STEP_CHARS:
        raise Refused(f"must be at most {MAX_STEP_CHARS} characters")
    return text or None


def _success(value: object) -> object:
    """A boolean, or the strings "true"/"false" (any case, trimmed)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise Refused("must be a boolean")


def _finite(value: object) -> object:
    """A JSON number that is a finite float (`10**400` has none)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused("must be a finite number")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        number = math.inf
    if not math.isfinite(number):
        raise Refused("must be a finite number", out_of_range=True)
    return number


class KnowledgeInput(ScopeInput):
    """A knowledge document: `content` is required; no `userAddress` ⇒ the agent's own
    (genesis) knowledge, with one ⇒ that user's workspace; the thread is ignored."""

    content: Annotated[str | None, BeforeValidator(_text_or_absent)] = Field(
        default=None,
        max_length=MAX_DOCUMENT_CHARS,
        description="Required; kept verbatim (chunk offsets are the document's).",
    )
    key: LooseId = Field(
        default=None, max_length=512, description="The document's identity (else uri)."
    )
    uri: Text = Field(default=None, max_length=2_048)
    source_format: Annotated[KnowledgeFormat | None, _one_of(KNOWLEDGE_FORMATS)] = Field(
        default=None,
        validation_alias=AliasChoices("sourceFormat", "source"),
        description="file, url or paste (default; alias source).",
    )
    embedding: Any = Field(
        default=None,
        exclude=True,
        description="Ignored: rows are embedded by the deployment's model, so they stay in "
        "the vector space its reads search.",
    )
    occurred_at: OccurredAt = None

    ALIASES = (*SCOPE_ALIASES, Alias(("sourceFormat", "source")), OCCURRED_AT)

    def submitted(
        self, scope: Scope | None = None, *, now: datetime | None = None
    ) -> KnowledgeSubmitted:
        """The `KnowledgeSubmitted` event in `scope` (default: this body's, checked; its
        thread, filters and metadata dropped), at `now`, else `occurredAt`, else the clock.
        The content is checked here, after the caller's scope was allowed (403 first)."""
        scope = scope or self.scope()
        if self.content is None or not self.content.strip():
            raise ScopeError("content is required")
        # every field was checked by this model (and the scope by `ScopeInput`)
        return KnowledgeSubmitted.model_construct(
            occurred_at=event_time(now, self.occurred_at)[0],
            scope=scope.tenant(),
            content=self.content,
            key=self.key,
            uri=self.uri,
            source_format=self.source_format or "paste",
            metadata=self.metadata or {},
        )


class CheckpointInput(ScopeInput):
    """A workflow checkpoint: `agentWallet` (aliases `agent_id`, `agent_wallet`,
    `workflowWallet`, `workflow_wallet`) is the workflow wallet, `runId` (aliases `run_id`,
    `threadId`) the run (required), `userAddress` the run's user; no local mode."""

    agent_wallet: Id | None = Field(
        default=None,
        validation_alias=AliasChoices(*WALLET_KEYS),
        max_length=MAX_ID_CHARS,
        description="The workflow wallet (aliases agent_id, workflowWallet, workflow_wallet).",
    )
    agent: LooseId = Field(
        default=None, max_length=200, description="Required: the agent it counts for."
    )
    type: Annotated[CheckpointKind | None, _one_of(CHECKPOINT_KINDS)] = Field(
        default=None, description=f"Required: {', '.join(CHECKPOINT_KINDS)}."
    )
    messages: list[MessageInput] | None = Field(
        default=None,
        max_length=MAX_MESSAGES,
        description="[{role, content}]: blank ones are dropped.",
    )
    step: Annotated[int | str | None, BeforeValidator(_step)] = None
    goal: Text = Field(default=None, max_length=MAX_GOAL_CHARS)
    success: Annotated[bool | None, BeforeValidator(_success)] = Field(
        default=None, description='A boolean, or "true"/"false".'
    )
    quality_score: Annotated[float | None, BeforeValidator(_finite)] = Field(
        default=None,
        validation_alias=AliasChoices("qualityScore", "quality_score"),
        description="A finite number (alias quality_score).",
    )
    occurred_at: OccurredAt = None

    ALIASES = (
        Alias(WALLET_KEYS, "empty"),
        *(row for row in SCOPE_ALIASES if "agentWallet" not in row.keys),
        Alias(("messages",), "null", list, "must be an array"),
        Alias(("goal",), "null", str, "must be a string"),
        Alias(("qualityScore", "quality_score"), "null"),
        OCCURRED_AT,
    )

    def recorded(
        self, scope: Scope | None = None, *, now: datetime | None = None
    ) -> WorkflowCheckpointRecorded:
        """The `WorkflowCheckpointRecorded` event in `scope` (default: this body's,
        checked), at `now`, else `occurredAt`, else the clock; what it must say is checked
        here, after the caller's scope was allowed (403 first)."""
        scope = scope or self.scope()
        if scope.thread_id is None:
            raise ScopeError("runId is required")
        if scope.mode == "local":
            raise ScopeError("workflow memory has no local mode")
        if self.agent is None:
            raise ScopeError("agent is required")
        if self.type is None:
            raise ScopeError(f"type must be one of {', '.join(CHECKPOINT_KINDS)}")
        messages = [
            WorkflowMessage.model_construct(role=m.role, content=m.content)
            for m in self.messages or ()
            if m.content is not None and m.role is not None  # a blank one says nothing
        ]
        if self.goal is None and not any(m.role != "tool" for m in messages):
            raise ScopeError("a checkpoint needs a user/assistant/system message or a goal")
        # every field was checked by this model; no mode: a checkpoint row is stored
        # without one (global reads see it)
        return WorkflowCheckpointRecorded.model_construct(
            occurred_at=event_time(now, self.occurred_at)[0],
            scope=scope.model_copy(
                update={"mode": None, "hai_id": None, "filters": None, "metadata": None}
            ),
            agent=self.agent,
            type=self.type,
            messages=messages,
            step=self.step,
            goal=self.goal,
            success=self.success,
            quality_score=self.quality_score,
        )


def knowledge_submitted(body: object, *, now: datetime | None = None) -> KnowledgeSubmitted:
    """Knowledge body → `KnowledgeSubmitted` (`KnowledgeInput.submitted`), checked to fit in
    one message as the SDK's publish does."""
    event = parse_body(KnowledgeInput, body).submitted(now=now)
    return within_message_limit(event, "the document")


def checkpoint_recorded(body: object, *, now: datetime | None = None) -> WorkflowCheckpointRecorded:
    """Workflow checkpoint body → `WorkflowCheckpointRecorded` (`CheckpointInput.recorded`),
    checked to fit in one message as the SDK's publish does."""
    event = parse_body(CheckpointInput, body).recorded(now=now)
    return within_message_limit(event, "the checkpoint")
