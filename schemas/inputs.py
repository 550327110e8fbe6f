"""Loose request bodies (the reference's JSON shapes, with aliases and defaults) → contracts.

This is the edge's validation: the SDK and the HTTP gateway call these before anything is
published, so a bad input is rejected with the reference's 400 message (REFERENCE §1.2) and
never reaches Kafka. Times are milliseconds since epoch.
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from typing import Any, TypeGuard, TypeVar

from pydantic import BaseModel

from schemas.events import MemoryRemembered, Message, ToolEvent, TurnRecorded, utc_now
from schemas.limits import INT64_MAX, MAX_MESSAGE_BYTES
from schemas.requests import ALL_LAYERS, ContextRequest, LayerName
from schemas.scope import Scope, ScopeError, clean_id, clean_str, parse_model

ROLES = ("user", "assistant", "system", "tool")
TOOL_RESULT_CHARS = 2000

E = TypeVar("E", bound=BaseModel)


def h32(text: str) -> str:
    """First 32 hex chars of SHA-256 of the UTF-8 text (REFERENCE §0 `H32`)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def to_ms(moment: datetime) -> int:
    """Milliseconds since epoch of an aware datetime."""
    return int(moment.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    """Aware UTC datetime of milliseconds since epoch."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def thread_session_id(scope: Scope, thread_id: str | None = None) -> str:
    """REFERENCE §1.5: `session:<global:agent | local:hai-or-agent>:<thread or main>`."""
    if scope.mode == "local":
        key = f"local:{scope.hai_id or scope.agent_wallet}"
    else:
        key = f"global:{scope.agent_wallet}"
    return f"session:{key}:{thread_id or scope.thread_id or 'main'}"


def _finite_number(value: object) -> TypeGuard[int | float]:
    """A JSON number usable as milliseconds or a ratio: finite and within 64 bits."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return (isinstance(value, int) or math.isfinite(value)) and abs(value) <= INT64_MAX


def within_message_limit(event: E, label: str) -> E:
    """`event` if its JSON fits in one message (`MAX_MESSAGE_BYTES`), else `ScopeError`: the
    edge never publishes what the broker or a consumer would refuse."""
    size = len(event.model_dump_json().encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise ScopeError(
            f"{label} is {size} bytes as JSON; at most {MAX_MESSAGE_BYTES} bytes are accepted"
        )
    return event


def _require_object(body: object, label: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScopeError(f"{label} must be an object")
    return body


def _int_in(value: object, default: int, low: int, high: int) -> int:
    """Clamp like the reference: non-numbers and 0 mean the default."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    number = math.floor(value)
    if number == 0:
        return default
    return max(low, min(high, number))


def _budget(body: dict[str, Any]) -> int | None:
    budget = body.get("budget")
    candidates: list[object] = []
    if isinstance(budget, dict):
        candidates += [budget.get(k) for k in ("maxCharacters", "max_chars")]
    candidates += [body.get(k) for k in ("maxContextCharacters", "max_context_chars")]
    for value in candidates:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return max(1, math.floor(value)) if value != 0 else None
    return None


def _layers(value: object) -> list[LayerName]:
    if not isinstance(value, list):
        return list(ALL_LAYERS)
    chosen: list[LayerName] = []
    for name in value:
        for known in ALL_LAYERS:
            if name == known and known not in chosen:
                chosen.append(known)
    return chosen or list(ALL_LAYERS)


def context_request(body: object) -> ContextRequest:
    """pre_turn body → `ContextRequest` with the defaults and clamps of REFERENCE §6.1."""
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    query = clean_str(data.get("query"))
    if query is None:
        raise ScopeError("query is required")
    return parse_model(
        ContextRequest,
        {
            "scope": scope,
            "query": query,
            "layers": _layers(data.get("layers")),
            "limit": _int_in(data.get("limit"), 5, 1, 20),
            "max_items": _int_in(data.get("maxItems", data.get("max_items")), 8, 1, 24),
            "max_item_chars": _int_in(
                data.get("maxItemChars", data.get("max_item_chars")), 500, 1, 2000
            ),
            "budget_chars": _budget(data),
            "include_raw": data.get("includeRaw") is True,
            "as_of": _as_of(data),
        },
    )


def _as_of(data: dict[str, Any]) -> int | None:
    value = data.get("asOf", data.get("as_of"))
    if value is None:
        return None
    if _finite_number(value) and value >= 0:
        return int(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
            return to_ms(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
        except (ValueError, OverflowError):
            raise ScopeError("asOf must be an ISO-8601 time or milliseconds") from None
    raise ScopeError("asOf must be an ISO-8601 time or milliseconds")


def _messages(data: dict[str, Any], now_ms: int) -> list[Message]:
    raw = data.get("messages")
    messages: list[Message] = []
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                raise ScopeError(f"messages[{i}] must be an object")
            role = item.get("role")
            if role not in ROLES:
                raise ScopeError(f"messages[{i}].role is invalid")
            content = clean_str(item.get("content"))
            if content is None:
                raise ScopeError(f"messages[{i}].content is required")
            stamp = item.get("timestamp")
            calls = item.get("toolCalls", item.get("tool_calls"))
            messages.append(
                parse_model(
                    Message,
                    {
                        "role": role,
                        "content": content,
                        "timestamp": stamp if isinstance(stamp, int) and stamp >= 0 else now_ms + i,
                        "tool_calls": calls if isinstance(calls, list) else None,
                    },
                )
            )
        return messages
    user = clean_str(data.get("userMessage"))
    assistant = clean_str(data.get("assistantMessage"))
    if user is None or assistant is None:
        raise ScopeError("messages or userMessage plus assistantMessage are required")
    return [
        Message(role="user", content=user, timestamp=now_ms),
        Message(role="assistant", content=assistant, timestamp=now_ms + 1),
    ]


def _tool_events(data: dict[str, Any], now_ms: int) -> list[ToolEvent]:
    raw = data.get("toolEvents", data.get("tool_events"))
    if not isinstance(raw, list):
        return []
    events: list[ToolEvent] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ScopeError(f"toolEvents[{i}] must be an object")
        name = clean_str(item.get("name")) or clean_str(item.get("toolName"))
        name = name or clean_str(item.get("tool"))
        if name is None:
            raise ScopeError(f"toolEvents[{i}].name is required")
        args = item.get("args", item.get("input"))
        result = item.get("result", item.get("output"))
        stamp = item.get("timestamp")
        events.append(
            parse_model(
                ToolEvent,
                {
                    "name": name,
                    "args": args if isinstance(args, dict) else {},
                    "status": clean_str(item.get("status")) or "completed",
                    "result": result[:TOOL_RESULT_CHARS] if isinstance(result, str) else None,
                    "timestamp": stamp if isinstance(stamp, int) and stamp >= 0 else now_ms + i,
                },
            )
        )
    return events


def turn_recorded(body: object, *, now: datetime | None = None) -> TurnRecorded:
    """post_turn body → `TurnRecorded` (REFERENCE §7.1 steps 1-5).

    `turnId` defaults to a hash of (sessionId, threadId, occurred_at, the messages), so the
    same body published twice with the same `occurredAt` is the same turn, while two
    different turns of a thread in the same millisecond are not (the reference hashed
    sessionId|threadId|now only: with turn ids deduplicating writes, the second turn of a
    millisecond would have been dropped as a redelivery).
    """
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    occurred = now or occurred_at_of(data) or utc_now()
    now_ms = to_ms(occurred)
    messages = _messages(data, now_ms)
    tools = _tool_events(data, now_ms)
    explicit_session = clean_id(data.get("sessionId"), "sessionId")
    if explicit_session is None and scope.thread_id is None:
        raise ScopeError("threadId or sessionId is required")
    session_id = explicit_session or thread_session_id(scope)
    thread_id = scope.thread_id or session_id
    spoken = "\n".join(f"{m.role}:{m.content}" for m in messages)
    turn_id = clean_id(data.get("turnId"), "turnId") or "turn_" + h32(
        f"{session_id}|{thread_id}|{now_ms}|{h32(spoken)}"
    )
    tokens = data.get("totalTokens", data.get("tokenCount"))
    window = data.get("contextWindow")
    metadata = data.get("metadata")
    event = parse_model(
        TurnRecorded,
        {
            "occurred_at": occurred,
            "scope": scope,
            "session_id": session_id,
            "thread_id": thread_id,
            "turn_id": turn_id,
            "context_id": clean_id(data.get("contextId"), "contextId"),
            "messages": messages,
            "tool_events": tools,
            "summary": clean_str(data.get("summary")),
            "total_tokens": tokens if isinstance(tokens, int) and tokens >= 0 else 0,
            "model_used": clean_str(data.get("modelUsed"))
            or clean_str(data.get("model"))
            or "external",
            "context_window": window if isinstance(window, int) and window >= 0 else 0,
            "metadata": metadata if isinstance(metadata, dict) else {},
        },
    )
    return within_message_limit(event, "the turn")


def occurred_at_of(data: dict[str, Any]) -> datetime | None:
    """The body's `occurredAt` (alias `occurred_at`: ms since epoch or ISO-8601, naive means
    UTC), None when absent; `ScopeError` when it is not a time."""
    value = data.get("occurredAt", data.get("occurred_at"))
    try:
        if _finite_number(value) and value > 0:
            return from_ms(int(value))
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value)
            parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
            if to_ms(parsed) < 0:  # message timestamps are milliseconds since epoch
                raise ValueError("before 1970")
            return parsed
    except (ValueError, OverflowError, OSError):
        raise ScopeError("occurredAt must be an ISO-8601 time or milliseconds") from None
    return None


FACT_TYPES = ("preference", "identity", "context", "skill", "relationship", "event")


def memory_remembered(body: object, *, now: datetime | None = None) -> MemoryRemembered:
    """remember body → `MemoryRemembered` (REFERENCE §7.4 steps 1-4)."""
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    content = clean_str(data.get("content")) or clean_str(data.get("fact"))
    if content is None:
        raise ScopeError("content is required")
    confidence = data.get("confidence")
    metadata = data.get("metadata")
    event = parse_model(
        MemoryRemembered,
        {
            "occurred_at": now or occurred_at_of(data) or utc_now(),
            "scope": scope,
            "content": content,
            "type": clean_str(data.get("type")) or "explicit_save",
            "retention": clean_str(data.get("retention")),
            "confidence": float(confidence) if _finite_number(confidence) else 1.0,
            "conflict_policy": clean_str(data.get("conflictPolicy"))
            or clean_str(data.get("conflict_policy")),
            "memory_scope": clean_str(data.get("scope")),
            "metadata": metadata if isinstance(metadata, dict) else {},
        },
    )
    return within_message_limit(event, "the fact")
