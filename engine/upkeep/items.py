"""Item lifecycle: get, update, delete and restore one row of the `memory` collection
(reference §11; conflicts are resolved in `engine.upkeep.conflicts`), always within an explicit
tenant.

Scope (fixes §16.3): every operation takes a `TenantFilter`. The agent is required; the user
matches exactly, and a filter without a user reaches user-less (agent-level) rows only; the
filter's `shared` flag is ignored, so a user's scope never edits agent-level rows. A row the
filter does not admit is reported exactly like a missing one (`NotFound`), so ids of other
tenants cannot be probed.

Visibility: soft-deleted rows are gone for every operation but a hard delete (a purge).
Superseded rows stay visible to `get_item` and editable (the reference hid them, §11).

Decay: a soft delete sets `decayScore = 0`. Any decay or cleanup job must filter
`metadata.status != "deleted"` (see `DECAY_SKIPS`) so it never raises a deleted row's score
again (the reference's hourly decay rewrote every row, §16.16). Only a restore
(`restore_item`, which gives it back the decay of its age), a re-stated fact
(`MemoryStore.revive`) or a `put` of `engine.upkeep.item_writes` (many rows at once) brings
a deleted row back.

History: given a `Ledger` (`engine.history`), every mutating function records what it
changed, with the ledger's cause (an update with the old and new text, a delete, a purge, a
restore, a supersede or merge with the validity it set).

Results: every mutating function returns the rows it changed (after the change; a hard-deleted
one as it was), to publish `MemoryChanged` for (`changed_scope`, `changed_layers`).

Times are milliseconds since epoch, taken from the caller's event (`at`), never the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from engine.decay import DEFAULT_HALF_LIFE_DAYS, decay_multiplier
from engine.errors import InputRejected, NotFound
from engine.history import Ledger, of_row
from engine.history import validity as validity_details
from engine.ingest.remember import SYSTEM_KEYS as REMEMBER_SYSTEM_KEYS
from engine.ports import Embedder, Vector
from engine.records import MemoryRow
from engine.scoping import TenantFilter, scope_of
from schemas.scope import Scope

EDITABLE_STATUSES = ("active", "archived", "superseded")
"""The statuses a caller may set with `update_item` ("deleted" only through `delete_item`)."""

DECAY_SKIPS = ("deleted",)
"""Statuses a decay update must never touch (a deleted row keeps `decayScore = 0`)."""

SYSTEM_KEYS = REMEMBER_SYSTEM_KEYS | {
    "slot",
    "sourceTurnId",
    "turnId",
    "contextId",
    "sessionId",
    "deletedAt",
    "restoredAt",
    "supersededAt",
    "conflictResolution",
    "conflictResolvedAt",
    "conflictReason",
    "winningMemoryId",
    "mergedFrom",
    "entityType",
    "name",
    "normalisedName",
    "embedding_provider",
    "embedding_dimensions",
    "embedding_cached",
}
"""Metadata keys the system owns (§16.27): caller metadata naming them is ignored. Status,
retention and confidence are set through their own arguments instead."""


@dataclass(frozen=True, slots=True)
class Embedded:
    """New content with its embedding (set together, so they never disagree)."""

    content: str
    embedding: Vector
    model: str


@dataclass(frozen=True, slots=True)
class RowPatch:
    """One atomic change to a row. `metadata` keys are merged (shallow) into the stored
    metadata; `validity` = (invalid_at, superseded_by) replaces both, None keeps them;
    `decay_score` None keeps it. Every patch sets `updatedAt = at`."""

    at: int
    text: Embedded | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    validity: tuple[int | None, str | None] | None = None
    decay_score: float | None = None


def apply_patch(row: MemoryRow, patch: RowPatch) -> MemoryRow:
    """The row after `patch` (the in-memory twin of the Mongo `$set`)."""
    out = replace(row, metadata={**row.metadata, **patch.metadata})
    if patch.text is not None:
        out = replace(
            out,
            content=patch.text.content,
            embedding=patch.text.embedding,
            embedding_model=patch.text.model,
            units=None,  # the message vectors were of the old text
        )
    if patch.validity is not None:
        out = replace(out, invalid_at=patch.validity[0], superseded_by=patch.validity[1])
    if patch.decay_score is not None:
        out = replace(out, decay_score=patch.decay_score)
    return out


def soft_delete_patch(at: int) -> RowPatch:
    return RowPatch(at=at, metadata={"status": "deleted", "deletedAt": at}, decay_score=0.0)


class ItemStore(Protocol):
    """Single rows of the `memory` collection, addressed by id *within* a tenant filter.

    A row is "visible" when the filter admits it (`TenantFilter.admits`, `shared` ignored)
    and it is not soft-deleted. Every method answers None for an invisible row and leaves
    it untouched."""

    async def get(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        """The visible row (superseded included), or None."""
        ...

    async def update(
        self, where: TenantFilter, vector_id: str, patch: RowPatch
    ) -> MemoryRow | None:
        """Apply `patch` atomically to the visible row; the row after, or None."""
        ...

    async def soft_delete(self, where: TenantFilter, vector_id: str, at: int) -> MemoryRow | None:
        """Mark the visible row deleted (`metadata.status`, `metadata.deletedAt = at`,
        `decayScore = 0`, `updatedAt = at`); the row after, or None."""
        ...

    async def hard_delete(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        """Remove the row the filter admits, soft-deleted ones included; the removed row, or
        None."""
        ...

    async def get_deleted(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        """The soft-deleted row the filter admits, or None (also for a visible row)."""
        ...

    async def restore(
        self, where: TenantFilter, vector_id: str, patch: RowPatch
    ) -> MemoryRow | None:
        """Apply `patch` atomically to the soft-deleted row the filter admits, only while it
        is still deleted; the row after, or None."""
        ...

    async def newest(
        self,
        where: TenantFilter,
        source: str | None,
        limit: int,
        as_of: int | None = None,
        *,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        """At most `limit` rows of `source` (None: any) the filter admits, newest first
        (ties: larger id first): the active ones (`include_superseded`: and the replaced), or
        with `as_of` (ms) those valid then (`MemoryRow.valid_at`; deleted rows never)."""
        ...

    async def scan(
        self, where: TenantFilter, tagged: Mapping[str, str], after: str | None, limit: int
    ) -> list[MemoryRow]:
        """At most `limit` active rows the filter admits exactly whose metadata holds every
        `tagged` value (a dotted path under `metadata`: equal, or a list holding it), by
        ascending id, ids after `after` only (None: from the first)."""
        ...


def exact(where: TenantFilter) -> TenantFilter:
    """The filter without `shared`/`shared_sources`: items match their tenant exactly."""
    return where.exact()


def checked(where: TenantFilter, vector_id: str) -> TenantFilter:
    """The exact filter of an item operation; InputRejected without an agent or an id."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if not vector_id.strip():
        raise InputRejected("id is required")
    return exact(where)


def missing(vector_id: str) -> NotFound:
    """The error of an item that is absent or outside the caller's tenant (one message)."""
    return NotFound(f"memory item {vector_id!r} not found")


async def get_item(store: ItemStore, where: TenantFilter, vector_id: str) -> MemoryRow:
    """The row, superseded ones included (history stays readable). NotFound when the row is
    absent, soft-deleted or outside `where`."""
    row = await store.get(checked(where, vector_id), vector_id)
    if row is None:
        raise missing(vector_id)
    return row


async def embed(embedder: Embedder, content: str) -> Embedded:
    """New content with its embedding (as a document)."""
    [vector] = await embedder.embed([content], "document")
    return Embedded(content, vector, embedder.model)


def _caller_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Caller metadata without system keys; keys must be usable as document field names."""
    out: dict[str, Any] = {}
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not key or "." in key or key.startswith("$"):
            raise InputRejected(f"metadata key {key!r} is not allowed")
        if key not in SYSTEM_KEYS:
            out[key] = value
    return out


def _status_change(row: MemoryRow, status: str, at: int) -> tuple[int | None, str | None] | None:
    """The validity implied by a caller-set status: superseding marks the row replaced now
    (kept if it already was); making it active/archived makes it current again."""
    if status == "superseded":
        return None if row.status == "superseded" else (at, row.superseded_by)
    return (None, None)


async def update_item(
    store: ItemStore,
    embedder: Embedder,
    where: TenantFilter,
    vector_id: str,
    *,
    content: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    retention: str | None = None,
    confidence: float | None = None,
    status: str | None = None,
    at: int,
    ledger: Ledger | None = None,
) -> MemoryRow:
    """Edit a visible row; returns it after the change (`updatedAt = at`), recorded as
    `updated` (old and new text when the content changed, the metadata keys set with their
    previous values) in the `ledger`.

    - `content` is trimmed; only when it differs from the stored content is it re-embedded
      (input type "document") and stored with the embedder's model (the dimension follows
      from the vector). Blank content is rejected.
    - `metadata` is merged shallowly into the stored metadata; system keys (`SYSTEM_KEYS`)
      in it are ignored, keys with "." or a leading "$" are rejected.
    - `retention` (non-blank), `confidence` (in [0, 1]) and `status` (one of
      `EDITABLE_STATUSES`) are written into metadata; "superseded" sets `invalidAt = at`,
      "active"/"archived" clear `invalidAt`/`supersededBy`.

    Raises InputRejected (bad input, checked before any read) or NotFound (not visible)."""
    where = checked(where, vector_id)
    sets = _edits(metadata, retention, confidence, status)
    new_content = None if content is None else content.strip()
    if new_content == "":
        raise InputRejected("content must not be blank")
    row = await get_item(store, where, vector_id)
    validity = None if status is None else _status_change(row, status, at)
    text = None
    if new_content is not None and new_content != row.content:
        text = await embed(embedder, new_content)
    patch = RowPatch(at=at, text=text, metadata=sets, validity=validity)
    after = must(await store.update(where, vector_id, patch), vector_id)
    if ledger is not None:
        details: dict[str, Any] = {
            "set": sets,
            "previous": {key: row.metadata.get(key) for key in sets},
        }
        if validity is not None:
            details.update(validity_details(row, *validity))
        old, new = (row.content, text.content) if text is not None else (None, None)
        await ledger.note(
            [of_row(after, "updated", ledger.cause, at, old=old, new=new, details=details)]
        )
    return after


def _edits(
    metadata: Mapping[str, Any] | None,
    retention: str | None,
    confidence: float | None,
    status: str | None,
) -> dict[str, Any]:
    """The metadata keys an update sets, validated."""
    sets = _caller_metadata(metadata)
    if retention is not None:
        if not retention.strip():
            raise InputRejected("retention must not be blank")
        sets["retention"] = retention.strip()
    if confidence is not None:
        if not 0.0 <= confidence <= 1.0:
            raise InputRejected("confidence must be in [0, 1]")
        sets["confidence"] = confidence
    if status is not None:
        if status not in EDITABLE_STATUSES:
            raise InputRejected(f"status must be one of {', '.join(EDITABLE_STATUSES)}")
        sets["status"] = status
    return sets


async def delete_item(
    store: ItemStore,
    where: TenantFilter,
    vector_id: str,
    *,
    hard: bool = False,
    at: int,
    ledger: Ledger | None = None,
) -> MemoryRow:
    """Soft (default): status "deleted", `metadata.deletedAt = at`, `decayScore = 0`; the row
    then behaves as missing (a second soft delete is NotFound) and decay jobs must skip it
    (`DECAY_SKIPS`). Hard: the row is removed, soft-deleted ones included. Returns the row
    after a soft delete, the removed row after a hard one. NotFound when not visible.
    Recorded as `deleted` (soft) or `purged` (hard: the texts of its history are erased, it
    said nothing any more, `Ledger.purged`)."""
    where = checked(where, vector_id)
    if hard:
        row = await store.hard_delete(where, vector_id)
    else:
        row = await store.soft_delete(where, vector_id, at)
    done = must(row, vector_id)
    if ledger is not None and hard:
        await ledger.purged([(done.vector_id, done.scope)], at)
    elif ledger is not None:
        await ledger.note([of_row(done, "deleted", ledger.cause, at)])
    return done


async def restore_item(
    store: ItemStore,
    where: TenantFilter,
    vector_id: str,
    *,
    at: int,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
    ledger: Ledger | None = None,
) -> MemoryRow:
    """Make a soft-deleted row visible again: status "superseded" when it had been replaced
    before it was deleted (its validity is kept), else "active"; `metadata.restoredAt = at`,
    `deletedAt` cleared, and the decay of its age back (`decay_multiplier`, 1 when pinned).
    Returns the row after; recorded as `restored`. NotFound when there is no deleted row in
    `where` (a purged one cannot come back); InputRejected when the row is not deleted."""
    where = checked(where, vector_id)
    row = await store.get_deleted(where, vector_id)
    if row is None:
        if await store.get(where, vector_id) is not None:
            raise InputRejected(f"memory item {vector_id!r} is not deleted")
        raise missing(vector_id)
    status = "superseded" if row.invalid_at is not None else "active"
    pinned = row.metadata.get("retention") == "pinned"
    decay = 1.0 if pinned else decay_multiplier(row.created_at, at, half_life_days)
    patch = RowPatch(
        at,
        metadata={"status": status, "deletedAt": None, "restoredAt": at},
        decay_score=decay,
    )
    after = must(await store.restore(where, vector_id, patch), vector_id)
    if ledger is not None:
        await ledger.note([of_row(after, "restored", ledger.cause, at, details={"status": status})])
    return after


def must(row: MemoryRow | None, vector_id: str) -> MemoryRow:
    """`row`, or NotFound (also when the row was deleted between a read and a write)."""
    if row is None:
        raise missing(vector_id)
    return row


def changed_scope(row: MemoryRow) -> Scope:
    """The scope to announce a change of `row` under (`MemoryChanged.scope`)."""
    return scope_of(row.scope)


def changed_layers(rows: Sequence[MemoryRow]) -> list[str]:
    """The search layers a change of these rows affects (`MemoryChanged.layers`)."""
    graph = any(r.source == "fact" or r.metadata.get("layer") == "graph" for r in rows)
    return ["graph", "vectors"] if graph else ["vectors"]
