"""The edge's entries: a loose body (the reference's JSON) → the contract it asks for, each
through its one model of `schemas` (`TurnInput`, `RememberInput`, `ContextInput`; the
loose rules and the refusals are `schemas.bodies`'). The SDK and the gateway call the models
themselves; these functions serve the callers that hold a plain body (benchmarks, tools,
tests), and check that the event fits in one message as the SDK's publish does. A bad body
raises `ScopeError` with the reference's 400 message, a number or a time out of its range
`ValueOutOfRange` (422), and nothing is published.
"""

from __future__ import annotations

from datetime import datetime

from schemas.bodies import parse_body, within_message_limit
from schemas.context_input import ContextInput
from schemas.events import MemoryRemembered, TurnRecorded
from schemas.remember_input import RememberInput
from schemas.requests import ContextRequest
from schemas.turn_input import TurnInput


def context_request(body: object) -> ContextRequest:
    """pre_turn body → `ContextRequest` (`ContextInput.request`)."""
    return parse_body(ContextInput, body).request()


def turn_recorded(body: object, *, now: datetime | None = None) -> TurnRecorded:
    """post_turn body → `TurnRecorded` (`TurnInput.recorded`: how the turn id and the
    times are made)."""
    return within_message_limit(parse_body(TurnInput, body).recorded(now=now), "the turn")


def memory_remembered(body: object, *, now: datetime | None = None) -> MemoryRemembered:
    """remember body → `MemoryRemembered` (`RememberInput.remembered`)."""
    return within_message_limit(parse_body(RememberInput, body).remembered(now=now), "the fact")
