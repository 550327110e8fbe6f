"""Ports: the I/O the engine needs, as Protocols named by role. Adapters live in
`engine.adapters` (Mongo, Redis, local ONNX embedder, in-memory for unit tests)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from engine.filters import NO_FILTERS, Filters
from engine.records import (
    ArchiveRecord,
    ItemChange,
    MemoryRow,
    PatternRecord,
    RelationRecord,
    Transcript,
    TranscriptAppend,
    WorkingAppend,
    WorkingBuffer,
)
from engine.records import Vector as Vector
from engine.scoping import TenantFilter

InputType = Literal["query", "document"]


class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension.

    `model` and `dimension` identify the vector space: they are stored on every row and are
    part of every embedding cache key. Returned rows are L2-normalised (cosine = dot product).
    """

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        """One vector per text, in input order."""
        ...


class TranscriptStore(Protocol):
    """Per-thread transcripts ("scene"), one record per turn, appends idempotent on its id."""

    async def append(self, turn: TranscriptAppend) -> bool:
        """Append the turn's messages (kept sorted by timestamp). False if already applied."""
        ...

    async def append_many(self, turns: Sequence[TranscriptAppend]) -> list[bool]:
        """`append` of each turn, in order, in a few round trips; one flag per turn."""
        ...

    async def recent(
        self, where: TenantFilter, limit: int, turns: int | None = None
    ) -> list[Transcript]:
        """Up to `limit` transcripts the filter admits, newest first; `turns`: newest only."""
        ...


class WorkingStore(Protocol):
    """Per-thread working buffers of the last N user/assistant lines."""

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        """Append lines, keeping the newest `keep`. False if the turn was already applied."""
        ...

    async def append_many(self, appends: Sequence[WorkingAppend], keep: int) -> list[bool]:
        """`append` of each, in order, in a few round trips (one write per buffer when none
        of its turns was applied before). One flag per append."""
        ...

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        """Sessions the filter admits, most recently touched first; lines newest first."""
        ...


class MemoryStore(Protocol):
    """The `memory` collection: embedded rows of every durable source."""

    async def insert_if_absent(self, row: MemoryRow) -> bool:
        """Insert unless a row with the same `vector_id` exists. True if inserted."""
        ...

    async def exists(self, vector_id: str) -> bool: ...

    async def insert_many_if_absent(self, rows: Sequence[MemoryRow]) -> builtins.set[str]:
        """`insert_if_absent` of each row in one unordered write; the ids inserted."""
        ...

    async def fill_embeddings(
        self, model: str, vectors: Mapping[str, Vector], units: Mapping[str, Vector] | None = None
    ) -> int:
        """Give each pending row (`MemoryRow.pending`) of `model` named in `vectors` its
        vector (and `MemoryRow.units` when `units` names it); rows already embedded are
        left as they are. How many were filled."""
        ...

    async def status_of(self, vector_id: str) -> str | None:
        """The row's `metadata.status` ("active" when unset), or None when there is none."""
        ...

    async def revive(self, vector_id: str, at: int) -> bool:
        """Make a deleted row active again as if said at `at` (a re-stated fact returns);
        False when the row is not deleted."""
        ...

    async def bump_access(self, vector_ids: Sequence[str], at: int) -> int:
        """Count one access for each row (accessCount + 1, lastAccessedAt = at): no change
        `changed_rows` reads back (the counting process applies it: `VectorIndex.accessed`)."""
        ...

    async def active_rows(
        self,
        where: TenantFilter,
        *,
        sources: Sequence[str] | None = None,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        """Active rows (status not deleted/superseded) the filter admits, with embeddings;
        `include_superseded` adds the replaced ones (for `as_of` reads)."""
        ...

    async def changed_rows(self, where: TenantFilter, since: int) -> list[MemoryRow]:
        """Rows the filter admits written at or after `since` (ms, the writer's clock),
        soft-deleted and replaced included: what a reader loaded before `since` applies. A
        hard-deleted row is gone: its removal moves `epoch`."""
        ...

    async def epoch(self, agent_wallet: str) -> int:
        """Moves when rows of the agent are hard-deleted: older states are reloaded."""
        ...

    async def slot_rows(self, where: TenantFilter, slot: str) -> list[MemoryRow]:
        """Every non-deleted fact of the tenant that sets `slot` (current and replaced)."""
        ...

    async def set_slot_if_absent(self, vector_id: str, where: TenantFilter, slot: str) -> bool:
        """Give the fact `vector_id` the `slot` if the filter admits it and it has none yet
        (it was stored without one, e.g. remembered explicitly). True if it was set."""
        ...

    async def set_validity(
        self, vector_id: str, invalid_at: int | None, superseded_by: str | None
    ) -> None:
        """Mark a fact replaced (at `invalid_at`, by `superseded_by`) or current again."""
        ...


class ItemHistory(Protocol):
    """Every change of the long-term items (`ItemChange`), kept apart from them (a purge is
    an item's last entry); reads confined to the item's own tenant."""

    async def record(self, changes: Sequence[ItemChange]) -> None:
        """Keep each change; a change kept already (the same `change_id`: its cause was
        handled again) is kept once, as first recorded."""
        ...

    async def of_item(
        self, where: TenantFilter, item_id: str, limit: int
    ) -> builtins.list[ItemChange]:
        """The newest `limit` changes of `item_id` whose item scope the filter admits
        exactly (agent, user — None: user-less items only —, mode, HAI id; not `shared`),
        oldest first (by `at`, then as recorded). Empty when none (or another tenant's)."""
        ...

    async def forget(self, where: TenantFilter, item_ids: Sequence[str]) -> int:
        """Erase what the changes of these items (of the filter's exact tenant) said: their
        old and new texts and the caller-given parts of their details
        (`engine.history.SPOKEN_DETAILS`); each keeps its kind, time, cause, actor and the
        rest of its details, marked `details.forgotten`. How many changes were touched."""
        ...


@dataclass(frozen=True, slots=True)
class VectorStats:
    """Counts over a tenant's active `memory` rows (deleted and superseded excluded).
    `oldest` / `newest` are `createdAt` in ms since epoch, None when there is no row;
    `avg_decay_score` is in [0, 1] (0 when there is no row)."""

    total: int = 0
    avg_decay_score: float = 0.0
    oldest: int | None = None
    newest: int | None = None
    by_source: Mapping[str, int] = field(default_factory=dict)


class MemoryStatsReader(Protocol):
    """Aggregate counts for admin tools (reference §13.2 stats): no content leaves."""

    async def stats(self, agent_wallet: str, user_address: str | None = None) -> VectorStats:
        """Stats of the agent's active rows; `user_address=None` counts every user's rows
        (and the agent-level ones), a user counts only that user's."""
        ...


class TranscriptCounter(Protocol):
    async def count(self, agent_wallet: str, user_address: str | None = None) -> int:
        """Number of stored transcripts of the agent (`user_address` as in `stats`)."""
        ...


class TranscriptHistory(Protocol):
    async def of_agent(self, agent: str, since: int) -> list[Transcript]:
        """Every transcript of the agent (all users) updated at or after `since` (ms since
        epoch), for jobs that recount from transcripts."""
        ...


class RelationStore(Protocol):
    """Typed links between entities, keyed by `relation_id`."""

    async def insert_if_absent(self, relation: RelationRecord) -> bool: ...

    async def around(self, where: TenantFilter, entity_ids: Sequence[str]) -> list[RelationRecord]:
        """Relations of the tenant touching any of the entities (either end), current and
        replaced (callers check `valid_at`)."""
        ...

    async def from_source(
        self, where: TenantFilter, source_id: str, type: str
    ) -> list[RelationRecord]:
        """The tenant's relations of one type leaving one entity."""
        ...

    async def set_validity(self, relation_id: str, invalid_at: int | None) -> None: ...


class PatternStore(Protocol):
    """Procedural patterns, keyed by `pattern_id`."""

    async def upsert(self, pattern: PatternRecord) -> None: ...

    async def active(self, where: TenantFilter, limit: int) -> list[PatternRecord]:
        """Active patterns the (durable) filter admits, highest success rate first."""
        ...


class ArchiveStore(Protocol):
    """Archives, keyed by `archive_id`."""

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool: ...

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        """Active archives the (durable) filter admits, newest first."""
        ...


class ArchiveCids(Protocol):
    """Where stored archives were pinned (reference §10.2), and which are not yet."""

    async def set_cid(self, archive_id: str, cid: str) -> None:
        """Record the IPFS CID of the (encrypted) archive."""
        ...

    async def unpinned(self, archive_id: str) -> ArchiveRecord | None:
        """The stored archive with its content (sealed as stored) if it has no CID yet;
        None if it is pinned, has no content or does not exist."""
        ...


class ArchivePinState(Protocol):
    """The pin state of stored archives, read by the pinning paths."""

    async def archive_cid(
        self, archive_id: str, agent_wallet: str, user_address: str | None, *, any_user: bool
    ) -> tuple[str | None] | None:
        """`(cid,)` of the agent's archive (`cid` None while unpinned), or None when it does
        not exist or is another agent's; with `any_user=False` also another user's
        (`user_address` None: user-less archives only)."""
        ...


class ArchivePinner(Protocol):
    """Pins one sealed (encrypted) archive to IPFS."""

    async def pin_archive(self, archive_id: str, encrypted: bytes) -> str:
        """Pin the blob; returns its CID. Raises `DependencyFailed` when the service fails."""
        ...


class VectorStore(Protocol):
    """Durable content-addressed document vectors: an opaque key (made of the model, the
    dimension and a hash of the text: `engine.embedding_store.vector_key`) → its vector. A
    text whose key is stored is never embedded again (replays run no model)."""

    async def get_many(self, keys: Sequence[str]) -> dict[str, Vector]:
        """The stored vectors of those keys that have one."""
        ...

    async def put_many(self, vectors: Mapping[str, Vector]) -> None:
        """Store vectors; a key already stored keeps its vector (same key, same vector)."""
        ...


class QueryCache(Protocol):
    """Namespaced query cache. Every method is fail-soft: errors mean miss / no-op."""

    async def token(self, chain: Sequence[str]) -> str | None:
        """A token derived from the current counters of the chain; None if unavailable
        (then the caller must not use the cache)."""
        ...

    async def tokens(self, chains: Sequence[Sequence[str]]) -> list[str | None]:
        """`token` of each chain, read in one round trip (a request needs its scope's and
        its tenant's)."""
        ...

    async def get(self, key: str) -> bytes | None: ...

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None: ...

    async def bump(self, chain: Sequence[str], ttl_seconds: int) -> int:
        """Increment every counter of the chain; returns how many were bumped."""
        ...


class Reranker(Protocol):
    """Scores candidate texts against a query.

    `name` identifies the provider and model (for logs and metrics).
    """

    name: str

    async def rerank(self, query: str, documents: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Relevance of each `(id, text)` document to `query`, as id → score in [0, 1]
        (higher is more relevant). Ids should be unique. Documents the provider did not score
        are absent. Raises `DependencyFailed` on any failure (transport, HTTP status, timeout,
        malformed reply, no usable score)."""
        ...


class VectorIndex(Protocol):
    """Nearest rows of one tenant to a query vector (exact cosine, or Atlas `$vectorSearch`
    with the tenant as a pre-filter)."""

    async def prepare(
        self,
        where: TenantFilter,
        *,
        model: str,
        dim: int,
        version: str | None = None,
        shared: str | None = None,
    ) -> None:
        """Catch up with the store for this tenant now (what `search` with the same
        arguments would read first), so the reads overlap the query's embedding; a no-op
        for an index that holds no state. Errors surface again from `search`."""
        ...

    def accessed(self, vector_ids: Sequence[str]) -> None:
        """The rows' access counts were bumped by one (`MemoryStore.bump_access`): an index
        holding them applies it; a no-op for one that holds no state."""
        ...

    async def vectors(
        self,
        where: TenantFilter,
        vector_ids: Sequence[str],
        *,
        model: str,
        dim: int,
        version: str | None = None,
        shared: str | None = None,
    ) -> dict[str, Vector]:
        """The stored vector of each of these rows `where` admits, embedded by `model` at
        `dim` (pending, deleted, absent rows left out): the thread layers' turn vectors."""
        ...

    async def search(
        self,
        where: TenantFilter,
        query: Vector,
        *,
        model: str,
        k: int,
        sources: Sequence[str] | None = None,
        version: str | None = None,
        shared: str | None = None,
        filters: Filters = NO_FILTERS,
        as_of: int | None = None,
        terms: Sequence[str] = (),
    ) -> list[tuple[MemoryRow, float | None]]:
        """Up to `k` (row, cosine) pairs, best first, of active rows embedded by `model`
        that pass `filters` (applied before the top-k, never after). `version` identifies
        the tenant's data (its namespace token): an index may reuse what it loaded for the
        same version and must catch up with the store when it changed; None means "the
        version is unknown" (check the store). `shared` identifies the agent's user-less
        rows alone (`engine.scoping.shared_chain`): when it did not move, a user's read
        widened to them need not read them back. `as_of` (ms) searches the rows valid then
        (facts replaced later included) instead of the current ones. `terms` (content terms
        of the query) let an index add rows that hold them to the cosine candidates. The
        cosine is None for a pending row of `model` (`MemoryRow.pending`) that its terms
        found: it has no vector yet, so only its text can make it a hit."""
        ...
