"""Records the stores keep, as plain dataclasses (the adapters map them to documents).

Times are milliseconds since epoch, taken from the event that produced the record, never
from the wall clock, so replaying a topic rebuilds identical records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

ACTIVE = "active"
INACTIVE_STATUSES = ("deleted", "superseded")
"""Rows with these `metadata.status` values are invisible to searches."""


@dataclass(frozen=True, slots=True)
class ScopeFields:
    """The tenant fields stored on every row. `user_address=None` marks agent-level rows."""

    agent_wallet: str
    user_address: str | None
    thread_id: str | None
    mode: str | None
    hai_id: str | None

    @property
    def scope_kind(self) -> str | None:
        return self.mode

    @property
    def scope_id(self) -> str:
        return self.hai_id or self.agent_wallet


@dataclass(frozen=True, slots=True)
class StoredMessage:
    role: str
    content: str
    timestamp: int
    tool_calls: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class TranscriptAppend:
    """One turn to append to a thread's transcript (idempotent on `turn_id`)."""

    session_id: str
    scope: ScopeFields
    turn_id: str
    messages: list[StoredMessage]
    summary: str | None
    token_count: int
    at: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Transcript:
    session_id: str
    scope: ScopeFields
    messages: list[StoredMessage]
    summary: str | None
    token_count: int
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class WorkingAppend:
    """Lines to append to a thread's working buffer (idempotent on `turn_id`)."""

    session_id: str
    scope: ScopeFields
    turn_id: str
    lines: list[str]
    at: int
    expires_at: int
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WorkingSession:
    """A working buffer. `lines` are newest first."""

    session_id: str
    scope: ScopeFields
    lines: list[str]
    state: dict[str, Any]
    last_accessed_at: int
    created_at: int


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """A row of the `memory` collection (sessions, facts, knowledge, … with an embedding)."""

    vector_id: str
    scope: ScopeFields
    content: str
    embedding: npt.NDArray[np.float32]
    embedding_model: str
    source: str
    created_at: int
    metadata: dict[str, Any] = field(default_factory=dict)
    decay_score: float = 1.0
    access_count: int = 0

    @property
    def embedding_dim(self) -> int:
        return int(self.embedding.shape[0])

    @property
    def status(self) -> str:
        value = self.metadata.get("status", ACTIVE)
        return value if isinstance(value, str) else ACTIVE
