"""Loose request bodies (the reference's JSON shapes, with aliases and defaults) → contracts.

This is the edge's validation: the SDK and the HTTP gateway call these before anything is
published, so a bad input is rejected with the reference's 400 message (reference §1.2) and
never reaches Kafka. A number or a time out of its range (`schemas.bounds`) is refused with
`ValueOutOfRange` (422) naming the field, never clamped into range or replaced by a default;
an absent one takes its default. Times are milliseconds since epoch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from schemas.bodies import parse_body
from schemas.bodies import within_message_limit as within_message_limit
from schemas.bounds import epoch_ms, parse_contract, whole_count
from schemas.events import MemoryRemembered, TurnRecorded, memory_type_problem, utc_now
from schemas.ids import from_ms as from_ms
from schemas.ids import h32 as h32
from schemas.ids import thread_session_id as thread_session_id
from schemas.ids import to_ms as to_ms
from schemas.remember_input import RememberInput
from schemas.requests import ALL_LAYERS, ContextRequest, LayerName
from schemas.scope import Scope, ScopeError, clean_str
from schemas.search_defaults import (
    MAX_ITEM_CHARS,
    MAX_ITEM_CHARS_MAX,
    MAX_ITEMS_MAX,
    PER_LAYER_LIMIT_MAX,
)
from schemas.turn_input import ROLES as ROLES
from schemas.turn_input import TOOL_RESULT_CHARS as TOOL_RESULT_CHARS
from schemas.turn_input import TurnInput


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


def turn_recorded(body: object, *, now: datetime | None = None) -> TurnRecorded:
    """post_turn body → `TurnRecorded` (reference §7.1 steps 1-5): the scope checked first,
    then the body as `schemas.bodies.TurnInput` (`TurnInput.recorded` says how the turn id
    and the times are made)."""
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    return parse_body(TurnInput, data).recorded(scope, now=now)


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
    """remember body → `MemoryRemembered` (reference §7.4 steps 1-4): the scope checked
    first, then the body as `schemas.remember_input.RememberInput`."""
    data = _require_object(body, "body")
    scope = Scope.parse(data)
    return parse_body(RememberInput, data).remembered(scope, now=now)
