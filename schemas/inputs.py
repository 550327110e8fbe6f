"""Loose request bodies (the reference's JSON shapes, with aliases and defaults) → contracts.

This is the edge's validation: the SDK and the HTTP gateway call these before anything is
published, so a bad input is rejected with the reference's 400 message (reference §1.2) and
never reaches Kafka. A number or a time out of its range (`schemas.bounds`) is refused with
`ValueOutOfRange` (422) naming the field, never clamped into range or replaced by a default;
an absent one takes its default. Times are milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from schemas.bounds import ValueOutOfRange, epoch_ms, parse_contract, whole_count
from schemas.events import (
    UNKNOWN_STATUS,
    MemoryRemembered,
    Message,
    ToolEvent,
    TurnRecorded,
    memory_type_problem,
    utc_now,
)
from schemas.ids import from_ms as from_ms
from schemas.ids import h32 as h32
from schemas.ids import thread_session_id as thread_session_id
from schemas.ids import to_ms as to_ms
from schemas.limits import MAX_MESSAGE_BYTES
from schemas.requests import ALL_LAYERS, ContextRequest, LayerName
from schemas.scope import Scope, ScopeError, clean_id, clean_str
from schemas.search_defaults import (
    MAX_ITEM_CHARS,
    MAX_ITEM_CHARS_MAX,
    MAX_ITEMS_MAX,
    PER_LAYER_LIMIT_MAX,
)

ROLES = ("user", "assistant", "system", "tool")
TOOL_RESULT_CHARS = 2000

E = TypeVar("E", bound=BaseModel)


def within_message_limit(event: E, label: str) -> E:
    """`event` if its JSON fits in one message (`MAX_MESSAGE_BYTES`), else `ScopeError`: the
    edge never publishes what the broker or a consumer would refuse."""
    try:
        size = len(event.model_dump_json().encode("utf-8"))
    except PydanticSerializationError:  # a lone surrogate in a field no text check covers
        raise ScopeError(f"{label} must be valid Unicode (no lone surrogates)") from None
    if size > MAX_MESSAGE_BYTES:
        raise ScopeError(
            f"{label} is {size} bytes as JSON; at most {MAX_MESSAGE_BYTES} bytes are accepted"
        )
    return event


def _require_object(body: object, label: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScopeError(f"{label} must be an object")
    return body


def _present(data: dict[str, Any], *keys: str) -> tuple[str, object]:
    """The first of `keys` present (not None) in `data`, with its value; else the first key
    and None."""
    for key in keys:
        if data.get(key) is not None:
            return key, data[key]
    return keys[0], None


def _count(data: dict[str, Any], keys: tuple[str, ...], default: int, high: int) -> int:
    """A per-page count (reference §6.1): absent means `default`; a whole number of at least
    1, lowered to `high` above it. Anything else is refused (`whole_count`), never
    clamped up or replaced by the default."""
    given = _given_count(data, keys, high)
    return default if given is None else given


def _given_count(data: dict[str, Any], keys: tuple[str, ...], high: int) -> int | None:
    """`_count` without a default: None when absent."""
    key, value = _present(data, *keys)
    if value is None:
        return None
    return min(high, whole_count(value, key))


def _budget(body: dict[str, Any]) -> int | None:
    """The character budget: `budget.maxCharacters` (alias `budget.max_chars`), else
    `maxContextCharacters` (alias `max_context_chars`); absent means no budget. A given
    budget is a whole number of at least 1."""
    budget = body.get("budget")
    if budget is not None and not isinstance(budget, dict):
        raise ScopeError("budget must be an object")
    inner = budget or {}
    for where, data, keys in (
        ("budget.", inner, ("maxCharacters", "max_chars")),
        ("", body, ("maxContextCharacters", "max_context_chars")),
    ):
        key, value = _present(data, *keys)
        if value is not None:
            return whole_count(value, where + key)
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
    """pre_turn body → `ContextRequest`: `limit` (at most 20), `maxItems` (at most 24),
    `maxItemChars` 500 (at most 2,000), no budget. An absent `limit` or `maxItems` stays
    None: the search fills a given budget, or takes reference §6.1's 5 and 8 without one
    (`ContextRequest.shape`). A count above its maximum is lowered to it; one below 1 is
    refused."""
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    query = clean_str(data.get("query"))
    if query is None:
        raise ScopeError("query is required")
    return parse_contract(
        ContextRequest,
        {
            "scope": scope,
            "query": query,
            "layers": _layers(data.get("layers")),
            "limit": _given_count(data, ("limit",), PER_LAYER_LIMIT_MAX),
            "max_items": _given_count(data, ("maxItems", "max_items"), MAX_ITEMS_MAX),
            "max_item_chars": _count(
                data, ("maxItemChars", "max_item_chars"), MAX_ITEM_CHARS, MAX_ITEM_CHARS_MAX
            ),
            "budget_chars": _budget(data),
            "include_raw": data.get("includeRaw") is True,
            "as_of": _as_of(data),
        },
    )


def _as_of(data: dict[str, Any]) -> int | None:
    key, value = _present(data, "asOf", "as_of")
    return epoch_ms(value, key)


def _timestamp(item: dict[str, Any], label: str, default: int) -> int:
    """A message's or tool event's `timestamp` (ms since epoch); absent means `default`."""
    stamp = epoch_ms(item.get("timestamp"), f"{label}.timestamp")
    return default if stamp is None else stamp


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
            calls = item.get("toolCalls", item.get("tool_calls"))
            name = item.get("name")
            if name is not None and clean_str(name) is None:
                raise ScopeError(f"messages[{i}].name must be a non-empty string")
            raw = item.get("raw")
            if raw is not None and (not isinstance(raw, str) or raw == ""):
                raise ScopeError(f"messages[{i}].raw must be a non-empty string")
            messages.append(
                parse_contract(
                    Message,
                    {
                        "role": role,
                        "content": content,
                        "timestamp": _timestamp(item, f"messages[{i}]", now_ms + i),
                        "tool_calls": calls if isinstance(calls, list) else None,
                        "name": clean_str(name) if name is not None else None,
                        "raw": raw,
                    },
                )
            )
        return messages
    user = clean_str(data.get("userMessage"))
    assistant = clean_str(data.get("assistantMessage"))
    if user is None or assistant is None:
        raise ScopeError("messages or userMessage plus assistantMessage are required")
    return [  # at the last millisecond of the time range, the answer is out of it
        parse_contract(Message, {"role": "user", "content": user, "timestamp": now_ms}),
        parse_contract(
            Message, {"role": "assistant", "content": assistant, "timestamp": now_ms + 1}
        ),
    ]


def _tool_events(data: dict[str, Any], now_ms: int) -> list[ToolEvent]:
    """`toolEvents` (alias `tool_events`): absent or null is none; anything but a list of
    objects is refused (an object was silently dropped before, issue 17). Each event: `name`
    (aliases `toolName`, `tool`) required, `args` (alias `input`) an object, `status` a
    string (absent or blank: `unknown`), `result` (alias `output`) kept when it is text,
    `timestamp` ms since epoch (default `now + index`)."""
    key, raw = _present(data, "toolEvents", "tool_events")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ScopeError(f"{key} must be a list of tool events, not {_json_type(raw)}")
    events: list[ToolEvent] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ScopeError(f"toolEvents[{i}] must be an object")
        name = clean_str(item.get("name")) or clean_str(item.get("toolName"))
        name = name or clean_str(item.get("tool"))
        if name is None:
            raise ScopeError(f"toolEvents[{i}].name is required")
        args_key, args = _present(item, "args", "input")
        if args is not None and not isinstance(args, dict):
            raise ScopeError(f"toolEvents[{i}].{args_key} must be an object")
        status = item.get("status")
        if status is not None and not isinstance(status, str):
            raise ScopeError(f"toolEvents[{i}].status must be a string")
        result = item.get("result", item.get("output"))
        events.append(
            parse_contract(
                ToolEvent,
                {
                    "name": name,
                    "args": args or {},
                    "status": clean_str(status) or UNKNOWN_STATUS,
                    "result": result[:TOOL_RESULT_CHARS] if isinstance(result, str) else None,
                    "timestamp": _timestamp(item, f"toolEvents[{i}]", now_ms + i),
                },
            )
        )
    return events


def _json_type(value: object) -> str:
    """The JSON name of a (decoded JSON) value's type, for messages: "an object", …"""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "a number" if isinstance(value, int | float) else "a list"


def turn_recorded(body: object, *, now: datetime | None = None) -> TurnRecorded:
    """post_turn body → `TurnRecorded` (reference §7.1 steps 1-5).

    `turnId` defaults to a hash of (sessionId, threadId, occurred_at, the messages), so the
    same body published twice with the same `occurredAt` is the same turn, while two
    different turns of a thread in the same millisecond are not (the reference hashed
    sessionId|threadId|now only: with turn ids deduplicating writes, the second turn of a
    millisecond would have been dropped as a redelivery).
    """
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    occurred = occurred_at_when(data, now)
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
    metadata = data.get("metadata")
    event = parse_contract(
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
            "total_tokens": _tokens(data, "totalTokens", "tokenCount"),
            "model_used": clean_str(data.get("modelUsed"))
            or clean_str(data.get("model"))
            or "external",
            "context_window": _tokens(data, "contextWindow"),
            "metadata": metadata if isinstance(metadata, dict) else {},
        },
    )
    return within_message_limit(event, "the turn")


def _tokens(data: dict[str, Any], *keys: str) -> int:
    """A token count (`totalTokens`, alias `tokenCount`; `contextWindow`): absent means 0;
    a whole number of at least 0."""
    key, value = _present(data, *keys)
    return 0 if value is None else whole_count(value, key, minimum=0)


def occurred_at_of(data: dict[str, Any]) -> datetime | None:
    """The body's `occurredAt` (alias `occurred_at`: ms since epoch or ISO-8601, naive means
    UTC), None when absent; `ScopeError` when it is not a time, `ValueOutOfRange` when it is
    outside `schemas.bounds.TIME_RANGE`."""
    key, value = _present(data, "occurredAt", "occurred_at")
    ms = epoch_ms(value, key)
    return None if ms is None else from_ms(ms)


def occurred_at_when(data: dict[str, Any], now: datetime | None) -> datetime:
    """The event's time: `now` when given (tests, a transcript's exchanges), else the body's
    `occurredAt`, else the wall clock. A given `occurredAt` is checked either way."""
    given = occurred_at_of(data)
    return now or given or utc_now()


FACT_TYPES = ("preference", "identity", "context", "skill", "relationship", "event")


def memory_type(value: str) -> str:
    """A remember's `type`, checked (`schemas.events.MemoryType`), or `ScopeError` naming it."""
    problem = memory_type_problem(value)
    if problem is not None:
        raise ScopeError(f"type: {problem}")
    return value


def memory_remembered(body: object, *, now: datetime | None = None) -> MemoryRemembered:
    """remember body → `MemoryRemembered` (reference §7.4 steps 1-4)."""
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    content = clean_str(data.get("content")) or clean_str(data.get("fact"))
    if content is None:
        raise ScopeError("content is required")
    confidence = data.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool) or not isinstance(confidence, int | float)
    ):
        raise ScopeError("confidence must be a number from 0 to 1")
    if isinstance(confidence, int) and not 0 <= confidence <= 1:  # 10**400 has no float
        raise ValueOutOfRange(f"confidence must be a number from 0 to 1, not {confidence}")
    metadata = data.get("metadata")
    event = parse_contract(
        MemoryRemembered,
        {
            "occurred_at": occurred_at_when(data, now),
            "scope": scope,
            "content": content,
            "type": memory_type(clean_str(data.get("type")) or "explicit_save"),
            "retention": clean_str(data.get("retention")),
            "confidence": 1.0 if confidence is None else confidence,
            "conflict_policy": clean_str(data.get("conflictPolicy"))
            or clean_str(data.get("conflict_policy")),
            "memory_scope": clean_str(data.get("scope")),
            "metadata": metadata if isinstance(metadata, dict) else {},
        },
    )
    return within_message_limit(event, "the fact")
