"""Loose bodies of the other callers sharing the store (reference §14) → contracts: knowledge
documents and workflow checkpoints.

Like `schemas.inputs`, this is the edge's validation (SDK and gateway): a bad input raises
`ScopeError` with a one-line message and nothing is published.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, get_args

from schemas.bodies import within_message_limit
from schemas.bounds import ValueOutOfRange, epoch_ms, parse_contract
from schemas.events import (
    CheckpointKind,
    KnowledgeFormat,
    KnowledgeSubmitted,
    WorkflowCheckpointRecorded,
    utc_now,
)
from schemas.ids import from_ms
from schemas.scope import Scope, ScopeError, clean_id, clean_str
from schemas.turn_input import ROLES

KNOWLEDGE_FORMATS: tuple[str, ...] = get_args(KnowledgeFormat)
CHECKPOINT_KINDS: tuple[str, ...] = get_args(CheckpointKind)
WALLET_ALIASES = ("workflowWallet", "workflow_wallet")
"""Names of the workflow wallet in the reference's workflow calls; `agentWallet` wins."""


def occurred_at_when(data: dict[str, Any], now: datetime | None) -> datetime:
    """The event's time: `now` when given, else the body's `occurredAt` (alias
    `occurred_at`: ms since epoch or ISO-8601, naive means UTC), else the wall clock. A given
    `occurredAt` is checked either way (`ValueOutOfRange` outside the time range)."""
    key = "occurredAt" if data.get("occurredAt") is not None else "occurred_at"
    ms = epoch_ms(data.get(key), key)
    return now or (from_ms(ms) if ms is not None else None) or utc_now()


def _object(body: object) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScopeError("body must be an object")
    return body


def knowledge_submitted(body: object, *, now: datetime | None = None) -> KnowledgeSubmitted:
    """Knowledge body → `KnowledgeSubmitted`.

    Keys: the scope, `content` (required, kept verbatim: chunk offsets are the document's),
    `key`, `uri`, `source` (alias `sourceFormat`: file, url or paste; default paste),
    `metadata`, `occurredAt`. A caller-supplied `embedding` is ignored: every row is embedded
    by the deployment's model, so it stays in the vector space its reads search."""
    data = _object(body)
    scope = Scope.parse(data)
    content = data.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ScopeError("content is required")
    fmt = clean_str(data.get("sourceFormat")) or clean_str(data.get("source")) or "paste"
    if fmt not in KNOWLEDGE_FORMATS:
        raise ScopeError(f"source must be one of {', '.join(KNOWLEDGE_FORMATS)}")
    metadata = data.get("metadata")
    event = parse_contract(
        KnowledgeSubmitted,
        {
            "occurred_at": occurred_at_when(data, now),
            "scope": scope.tenant(),
            "content": content,
            "key": clean_id(data.get("key"), "key"),
            "uri": clean_str(data.get("uri")),
            "source_format": fmt,
            "metadata": metadata if isinstance(metadata, dict) else {},
        },
    )
    return within_message_limit(event, "the document")


def _workflow_scope(data: dict[str, Any]) -> Scope:
    scoped = dict(data)
    if not any(clean_id(scoped.get(k), k) for k in ("agentWallet", "agent_id", "agent_wallet")):
        wallet = next((w for k in WALLET_ALIASES if (w := clean_id(data.get(k), k))), None)
        if wallet is not None:
            scoped["agentWallet"] = wallet
    scope = Scope.parse(scoped)
    if scope.thread_id is None:
        raise ScopeError("runId is required")
    if scope.mode == "local":
        raise ScopeError("workflow memory has no local mode")
    # no mode: a checkpoint row is stored without one (global reads see it)
    return scope.model_copy(
        update={"mode": None, "hai_id": None, "filters": None, "metadata": None}
    )


def _messages(value: object) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScopeError("messages must be an array")
    messages: list[dict[str, str]] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ScopeError(f"messages[{i}] must be an object")
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise ScopeError(f"messages[{i}].role is invalid")
        if not isinstance(content, str):
            raise ScopeError(f"messages[{i}].content must be a string")
        if content.strip():  # a blank message says nothing
            messages.append({"role": role, "content": content})
    return messages


def _success(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ScopeError("success must be a boolean")


def _quality(data: dict[str, Any]) -> float | None:
    value = data.get("qualityScore", data.get("quality_score"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScopeError("qualityScore must be a finite number")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        number = math.inf
    if not math.isfinite(number):
        raise ValueOutOfRange("qualityScore must be a finite number")
    return number


def _step(value: object) -> int | str | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        return clean_str(value)
    raise ScopeError("step must be a number or a string")


def checkpoint_recorded(body: object, *, now: datetime | None = None) -> WorkflowCheckpointRecorded:
    """Workflow checkpoint body → `WorkflowCheckpointRecorded`.

    Keys: `agentWallet` (aliases `agent_id`, `workflowWallet`, `workflow_wallet`), `runId`
    (aliases `run_id`, `threadId`; required), `userAddress` (alias `user_id`), `agent`
    (required), `type` (step_learning, workflow_evaluation or context_compaction), `messages`
    (`[{role, content}]`; blank ones dropped), `step`, `goal`, `success` (a boolean or
    "true"/"false"), `qualityScore` (alias `quality_score`), `occurredAt`."""
    data = _object(body)
    scope = _workflow_scope(data)
    agent = clean_id(data.get("agent"), "agent")
    if agent is None:
        raise ScopeError("agent is required")
    kind = data.get("type")
    if kind not in CHECKPOINT_KINDS:
        raise ScopeError(f"type must be one of {', '.join(CHECKPOINT_KINDS)}")
    messages = _messages(data.get("messages"))
    goal = data.get("goal")
    if goal is not None and not isinstance(goal, str):
        raise ScopeError("goal must be a string")
    goal = clean_str(goal)
    if goal is None and not any(m["role"] != "tool" for m in messages):
        raise ScopeError("a checkpoint needs a user/assistant/system message or a goal")
    event = parse_contract(
        WorkflowCheckpointRecorded,
        {
            "occurred_at": occurred_at_when(data, now),
            "scope": scope,
            "agent": agent,
            "type": kind,
            "messages": messages,
            "step": _step(data.get("step")),
            "goal": goal,
            "success": _success(data.get("success")),
            "quality_score": _quality(data),
        },
    )
    return within_message_limit(event, "the checkpoint")
