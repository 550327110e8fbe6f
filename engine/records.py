"""Records the stores keep, as plain dataclasses (the adapters map them to documents).

Times are milliseconds since epoch, taken from the event that produced the record, never
from the wall clock, so replaying a topic rebuilds identical records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from schemas.ids import h32

ACTIVE = "active"
INACTIVE_STATUSES = ("deleted", "superseded")
"""Rows with these `metadata.status` values are invisible to searches."""


def turn_row_id(agent_wallet: str, session_id: str, turn_id: str) -> str:
    """The id of the memory row of one turn of an agent's thread (what a fact's
    `sourceSessionId` and `sourceTurnId` point at)."""
    return "vec_" + h32(f"{agent_wallet}|{session_id}|{turn_id}|session")


def outdated_turns(rows: Iterable[MemoryRow]) -> dict[str, int]:
    """Turn (session) row id → when the first fact it stated was replaced, from the replaced
    fact rows among `rows` (issue 17 §2). Derived when read, from the facts' own validity, so
    it does not depend on which of a turn and its facts was stored first (a replay rebuilds
    the same)."""
    out: dict[str, int] = {}
    for r in rows:
        if r.source != "fact" or r.invalid_at is None:
            continue
        turn, session = r.metadata.get("sourceTurnId"), r.metadata.get("sourceSessionId")
        if isinstance(turn, str) and isinstance(session, str):
            vid = turn_row_id(r.scope.agent_wallet, session, turn)
            out[vid] = min(out.get(vid, r.invalid_at), r.invalid_at)
    return out


def outdated_since(metadata: Mapping[str, Any]) -> int | None:
    """When the first fact a turn row stated was replaced (`metadata.outdatedSince`, set on
    the rows the vector index returns), or None."""
    since = metadata.get("outdatedSince")
    return since if isinstance(since, int) and not isinstance(since, bool) else None


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

    def document_key(self, session_id: str) -> str:
        """The storage key of a session's transcript or working buffer: the session id
        within this tenant. The reference keyed them by session id alone, whose thread form
        (`session:global:<agent>:<thread>`) names no user and the local form no agent, so
        two users sharing a thread id wrote into one document; the key now carries the
        whole tenant (agent, user, mode, hai) and cannot collide across tenants."""
        return _document_key(
            self.agent_wallet, self.user_address, self.mode, self.hai_id, session_id
        )

    def view(self) -> dict[str, Any]:
        """The stored tenant fields, as in a document (for filter matching)."""
        return {
            "agentWallet": self.agent_wallet,
            "userAddress": self.user_address,
            "threadId": self.thread_id,
            "mode": self.mode,
            "haiId": self.hai_id,
            "scopeKind": self.scope_kind,
            "scopeId": self.scope_id,
        }


@lru_cache(maxsize=1 << 16)
def _document_key(
    agent: str, user: str | None, mode: str | None, hai: str | None, session_id: str
) -> str:
    """`ScopeFields.document_key`, remembered: a batch of turns asks it for the same few
    threads again and again (a hash of their JSON, a fifth of a turn's planning, issue 29)."""
    parts = [agent, user, mode, hai, session_id]
    return "s_" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40]


Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as stored in a transcript. `name` is its speaker's name when the turn gave
    one (`schemas.events.Message.name`); `said` is how the memory layers show it."""

    role: str
    content: str
    timestamp: int
    tool_calls: list[dict[str, Any]] | None = None
    turn_id: str | None = None
    name: str | None = None
    raw: str | None = None
    """The caller's own form of the message (`schemas.events.Message.raw`), kept verbatim."""

    @property
    def said(self) -> str:
        """The words with their speaker's name in front ("Melanie: I went …") when the
        name is known and the words do not already open with it."""
        return said_by(self.name, self.content)


def said_by(name: str | None, content: str) -> str:
    """`content` with its speaker's name in front ("Melanie: I went …") when `name` is
    given and the words do not already open with it (`StoredMessage.said`)."""
    if name and not content.lstrip().startswith(f"{name}:"):
        return f"{name}: {content}"
    return content


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
    metadata: dict[str, Any] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        return {**self.scope.view(), "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class WorkingAppend:
    """Lines to append to a thread's working buffer (idempotent on `turn_id`). `row_id` is
    the turn's turn row (`turn_row_id`), whose vector ranks the buffer (the buffer holds no
    vector of its own)."""

    session_id: str
    scope: ScopeFields
    turn_id: str
    lines: list[str]
    at: int
    expires_at: int
    state: dict[str, Any] = field(default_factory=dict)
    row_id: str | None = None


WORKING_TURN_ROWS = 6
"""Turn rows a working buffer remembers (about the turns its 12 lines come from)."""


@dataclass(frozen=True, slots=True)
class WorkingBuffer:
    """A working buffer. `lines` are newest first; `turn_rows` are the turn rows of its
    newest turns (`WORKING_TURN_ROWS` of them), oldest first."""

    session_id: str
    scope: ScopeFields
    lines: list[str]
    state: dict[str, Any]
    last_accessed_at: int
    created_at: int
    turn_rows: list[str] = field(default_factory=list)

    def view(self) -> dict[str, Any]:
        return {**self.scope.view(), "workingMemory": {"state": self.state, "entities": {}}}


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
    invalid_at: int | None = None
    """When a later fact about the same thing replaced this one (ms); None while current."""
    superseded_by: str | None = None
    units: npt.NDArray[np.float32] | None = None
    """A turn row's message units: one vector per message of `content`, in order, of what
    the message says (`engine.retrieval.units.unit_texts`), by `embedding_model`; None when
    the row has none (not a turn, pending, or stored before units existed)."""

    @property
    def embedding_dim(self) -> int:
        return int(self.embedding.shape[0])

    @property
    def pending(self) -> bool:
        """The row's vector is not computed yet (an empty `embedding`): the embedding stage
        fills it; until then the row is found by its text alone."""
        return self.embedding.size == 0

    def valid_at(self, as_of: int | None) -> bool:
        """Whether the row is visible: current rows when `as_of` is None; otherwise rows
        that existed at `as_of` and had not been replaced yet (deleted rows never)."""
        status = self.status
        if status == "deleted":
            return False
        if as_of is None:
            return status not in INACTIVE_STATUSES
        if self.created_at > as_of:
            return False
        if self.invalid_at is None:
            return status not in INACTIVE_STATUSES
        return self.invalid_at > as_of

    @property
    def status(self) -> str:
        value = self.metadata.get("status", ACTIVE)
        return value if isinstance(value, str) else ACTIVE

    def view(self) -> dict[str, Any]:
        return {**self.scope.view(), "source": self.source, "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class Cause:
    """Why a long-term item changed. `kind`: "event" (an event a consumer group handled;
    `id` is its event id), "request" (an item request; `id` is its correlation id) or "job"
    (a maintenance job; `id` is `<type>@<job time>`). `name` says what (the event's
    contract, `item.update`, the job type), `actor` who (the requesting credential or
    client, `extractor:<name>`, `agent` for an explicit remember, `job`)."""

    kind: str
    id: str
    name: str
    actor: str


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One change of a long-term item (a `memory` row), kept apart from the row
    (`engine.ports.ItemHistory`; the kinds: `engine.history.CHANGE_KINDS`).
    `scope` is the item's (history is confined to the item's tenant); `at` is when it
    changed (ms since epoch: the cause's time); `old_content` / `new_content` the text
    before and after when the change touched it (a creation has only the new, a purge only
    the old); `details` what else changed (status, metadata keys, validity)."""

    change_id: str
    item_id: str
    scope: ScopeFields
    kind: str
    at: int
    cause: Cause
    old_content: str | None = None
    new_content: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PatternRecord:
    """A procedural pattern (e.g. a repeated tool sequence) of an agent, optionally per user.
    `success_rate` in [0, 1] comes from tool outcomes, over the `known_count` runs whose
    outcome was reported (`unknown_count` of the `execution_count` runs did not report
    theirs); times in ms."""

    pattern_id: str
    scope: ScopeFields
    pattern_type: str
    trigger_type: str
    trigger_value: str
    steps: list[str]
    summary: str
    success_rate: float
    execution_count: int
    last_executed: int
    created_at: int
    embedding: Vector | None = None
    embedding_model: str | None = None
    tags: list[str] = field(default_factory=list)
    status: str = ACTIVE
    unknown_count: int = 0

    @property
    def known_count(self) -> int:
        return self.execution_count - self.unknown_count

    def view(self) -> dict[str, Any]:
        meta = {"tags": self.tags, "patternType": self.pattern_type}
        return {**self.scope.view(), "metadata": meta}


@dataclass(frozen=True, slots=True)
class ArchiveSeal:
    """The sealed fields of an archive at rest (`engine.upkeep.archive_seal`): AES-256-GCM
    blobs (12-byte nonce, ciphertext, 16-byte tag) under the tenant's key derived from the
    archive key `key_id`."""

    key_id: str
    index: bytes
    """The summary, topics and embedding: what search opens."""
    content: bytes | None = None
    """The stored payload; None when a read left it out (search never reads it)."""


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """A compressed archive of a tenant's older memory; `summary` and `topics` are what
    search sees (the payload itself is not searched).

    A sealed record (`seal` set, as stored when an archive key is configured) has an empty
    summary, no topics, no embedding and no content: they are inside `seal`."""

    archive_id: str
    scope: ScopeFields
    summary: str
    topics: list[str]
    entry_count: int
    start: int
    end: int
    created_at: int
    embedding: Vector | None = None
    embedding_model: str | None = None
    status: str = ACTIVE
    metadata: dict[str, Any] = field(default_factory=dict)
    content: str | None = None
    """The stored payload (base64 of gzip of JSON); never searched, read back on demand."""
    ipfs_cid: str | None = None
    seal: ArchiveSeal | None = None

    def view(self) -> dict[str, Any]:
        return {**self.scope.view(), "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class RelationRecord:
    """A directed, typed link between two entities of one tenant. Entity ids are the
    entities' memory-row ids; names are kept alongside so hydration needs no second read."""

    relation_id: str
    scope: ScopeFields
    source_id: str
    source_name: str
    type: str
    target_id: str
    target_name: str
    created_at: int
    metadata: dict[str, Any] = field(default_factory=dict)
    invalid_at: int | None = None
    """When a later link of a single-valued type replaced this one (ms); None while current."""

    def valid_at(self, as_of: int | None) -> bool:
        if as_of is None:
            return self.invalid_at is None
        return self.created_at <= as_of and (self.invalid_at is None or self.invalid_at > as_of)
