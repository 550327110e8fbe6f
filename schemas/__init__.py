"""Frozen pydantic v2 contracts of mnemostream: scope, events, requests/replies, topics.

Everything that crosses a process boundary (Kafka, HTTP) is defined here and nowhere else.
"""

from schemas.events import (
    FactsExtracted,
    MemoryChanged,
    MemoryRemembered,
    Message,
    ToolEvent,
    TurnRecorded,
)
from schemas.requests import (
    ContextItem,
    ContextReply,
    ContextRequest,
    ContextUsage,
    LayerSearchReply,
    LayerSearchRequest,
)
from schemas.scope import Scope, ScopeError

__all__ = [
    "ContextItem",
    "ContextReply",
    "ContextRequest",
    "ContextUsage",
    "FactsExtracted",
    "LayerSearchReply",
    "LayerSearchRequest",
    "MemoryChanged",
    "MemoryRemembered",
    "Message",
    "Scope",
    "ScopeError",
    "ToolEvent",
    "TurnRecorded",
]
