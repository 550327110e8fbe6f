"""The reference's `transcripts/index` body (reference §13.3) → one `TurnRecorded` per
exchange, so a whole transcript is stored by the transcripts group like turns recorded one
by one (transcript appended, the thread's working buffer, one embedded `session` row per
exchange; extraction and patterns read the same turns).

An exchange is the messages from one user message up to the next user message that follows
an assistant answer (system and tool messages stay with the exchange they sit in); an
exchange longer than `MAX_MESSAGES` is cut. The reference embedded every message as its own
row; an exchange is the unit pre_turn's layers and the transcript store already work in.

Turn ids are derived from the tenant, the session, the thread, the exchange's position and
its text (never the clock), so indexing the same transcript twice, or a transcript that
grew, stores each exchange once (the reference's upsert replaced the stored messages,
reference §16.11). Like `schemas.inputs`, this is the edge's validation: a bad input raises
`ScopeError` and nothing is published. Times are milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from schemas.bodies import parse_body
from schemas.events import MAX_MESSAGES, TurnRecorded, utc_now
from schemas.ids import from_ms, h32, to_ms
from schemas.inputs import turn_recorded
from schemas.scope import SCOPE_KEYS, Scope, ScopeError, clean_id
from schemas.turn_input import MessageInput

MAX_TRANSCRIPT_MESSAGES = 2_000
"""Upper bound on the messages of one call (send a longer transcript in parts)."""
SPOKEN = ("user", "assistant")
TURN_SCOPE_KEYS = SCOPE_KEYS - {"filters", "metadata"}
"""The scope keys (every alias) each exchange's turn body carries; metadata is merged apart."""


def _messages(raw: object, now_ms: int) -> list[dict[str, Any]]:
    """The non-blank messages with a role and a timestamp each (given, else `now_ms` + the
    position, so the transcript's order survives; a given one outside
    `schemas.bounds.TIME_RANGE` is refused); blank ones are dropped (an assistant message
    carrying only tool calls has no text to store). Each is a turn's message
    (`schemas.turn_input.MessageInput`), refused in the same words."""
    if not isinstance(raw, list):
        raise ScopeError("messages must be a non-empty array")
    if len(raw) > MAX_TRANSCRIPT_MESSAGES:
        raise ScopeError(
            f"messages holds {len(raw)} items; at most {MAX_TRANSCRIPT_MESSAGES} per call"
        )
    kept: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        message = parse_body(MessageInput, item, f"messages[{i}]")
        if message.content is None:
            continue
        kept.append(
            {
                "role": message.role,
                "content": message.content,
                "timestamp": now_ms + i if message.timestamp is None else message.timestamp,
                "index": i,
                **({"toolCalls": message.tool_calls} if message.tool_calls is not None else {}),
            }
        )
    return kept


def exchanges(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Messages cut into exchanges (see the module docstring), in order."""
    out: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    answered = False
    for message in messages:
        starts = message["role"] == "user" and answered
        if current and (starts or len(current) >= MAX_MESSAGES):
            out.append(current)
            current, answered = [], False
        current.append(message)
        answered = answered or message["role"] == "assistant"
    if current:
        out.append(current)
    return out


def transcript_turns(body: object, *, now: datetime | None = None) -> list[TurnRecorded]:
    """transcripts/index body → the turns to publish, oldest first; `[]` when there is no
    user/assistant content (the reference's skip).

    Required: `sessionId` (the transcript's id), `threadId` (aliases as in the scope),
    `agentWallet`, `messages[]`. Optional: `userAddress`, `mode`, `haiId`, `modelUsed`/`model`,
    `totalTokens`/`tokenCount` (counted once, on the first turn), `metadata`.
    `rememberWorkingMemory: false` is refused: the thread's working buffer is always
    appended (pre_turn's working layer reads it), and silently ignoring it would surprise."""
    if not isinstance(body, dict):
        raise ScopeError("body must be an object")
    scope = Scope.parse(body)
    session_id = clean_id(body.get("sessionId"), "sessionId")
    if session_id is None:
        raise ScopeError("sessionId is required")
    if scope.thread_id is None:
        raise ScopeError("threadId is required")
    if body.get("rememberWorkingMemory", True) is not True:
        raise ScopeError(
            "rememberWorkingMemory must be true: the thread's working memory is always appended"
        )
    now_ms = to_ms(now or utc_now())
    messages = _messages(body.get("messages"), now_ms)
    if not any(m["role"] in SPOKEN for m in messages):
        return []
    common = {k: body[k] for k in TURN_SCOPE_KEYS if k in body}
    for key in ("modelUsed", "model"):
        if key in body:
            common[key] = body[key]
    metadata = body.get("metadata")
    caller = metadata if isinstance(metadata, dict) else {}
    tenant = (
        f"{scope.agent_wallet}|{scope.user_address or ''}|{scope.mode or ''}|{scope.hai_id or ''}"
    )
    turns: list[TurnRecorded] = []
    for n, part in enumerate(exchanges(messages)):
        first = part[0]["index"]
        spoken = "\n".join(f"{m['role']}:{m['content']}" for m in part)
        turn_id = "turn_" + h32(
            f"transcript|{tenant}|{session_id}|{scope.thread_id}|{first}|{h32(spoken)}"
        )
        turn_body: dict[str, Any] = {
            **common,
            "sessionId": session_id,
            "turnId": turn_id,
            "messages": [{k: v for k, v in m.items() if k != "index"} for m in part],
            "metadata": {**caller, "indexedFrom": "transcripts/index", "messageIndex": first},
        }
        if n == 0:
            tokens = body.get("totalTokens", body.get("tokenCount"))
            if tokens is not None:
                turn_body["totalTokens"] = tokens
        said_at = from_ms(max(m["timestamp"] for m in part))
        turns.append(turn_recorded(turn_body, now=said_at))
    return turns
