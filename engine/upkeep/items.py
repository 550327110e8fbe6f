"""Item lifecycle: get, update, delete and resolve one row of the `memory` collection
(reference §11), always within an explicit tenant.

Scope (fixes §16.3): every operation takes a `TenantFilter`. The agent is required; the user
matches exactly, and a filter without a user reaches user-less (agent-level) rows only; the
filter's `shared` flag is ignored, so a user's scope never edits agent-level rows. A row the
filter does not admit is reported exactly like a missing one (`NotFound`), so ids of other
tenants cannot be probed.

Visibility: soft-deleted rows are gone for every operation except a hard delete (which
purges them). Superseded rows stay visible to `get_item` and editable, so a user can see and
correct history (the reference hid them, §11).

Decay: a soft delete sets `decayScore = 0` for good. Any decay or cleanup job must filter
`metadata.status != "deleted"` (see `DECAY_SKIPS`) so it never raises a deleted row's score
again (the reference's hourly decay rewrote every row, §16.16). Only a re-stated fact
(`MemoryStore.revive`) brings a deleted row back.

Results: every mutating function returns the rows it changed (the row after the change; for a
hard delete the row as it was), so the caller can publish `MemoryChanged` for each row's
scope (`changed_scope`, `changed_layers`).

Times are milliseconds since epoch, taken from the caller's event (`at`), never the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from engine.errors import InputRejected, NotFound
from engine.ingest.remember import SYSTEM_KEYS as REMEMBER_SYSTEM_KEYS
from engine.ports import Embedder, Vector
from engine.records import INACTIVE_STATUSES, MemoryRow
from engine.scoping import TenantFilter, scope_of
from schemas.scope import Scope

EDITABLE_STATUSES = ("active", "archived", "superseded")
"""The statuses a caller may set with `update_item` ("deleted" only through `delete_item`)."""

Resolution = Literal["supersede", "keep", "merge", "ignore"]
RESOLUTIONS: tuple[Resolution, ...] = ("supersede", "keep", "merge", "ignore")

DECAY_SKIPS = ("deleted",)
"""Statuses a decay update must never touch (a deleted row keeps `decayScore = 0`)."""

SYSTEM_KEYS = REMEMBER_SYSTEM_KEYS | {
    "slot",
    "sourceTurnId",
    "turnId",
    "contextId",
    "sessionId",
    "deletedAt",
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

MERGE_SEPARATOR = "\n"


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


def exact(where: TenantFilter) -> TenantFilter:
    """The filter without the agent-wide widenings (`shared`, `shared_sources`): items match
    their tenant exactly."""
    return where.exact()


def _checked(where: TenantFilter, vector_id: str) -> TenantFilter:
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if not vector_id.strip():
        raise InputRejected("id is required")
    return exact(where)


def _missing(vector_id: str) -> NotFound:
    return NotFound(f"memory item {vector_id!r} not found")


async def get_item(store: ItemStore, where: TenantFilter, vector_id: str) -> MemoryRow:
    """The row, superseded ones included (history stays readable). NotFound when the row is
    absent, soft-deleted or outside `where`."""
    row = await store.get(_checked(where, vector_id), vector_id)
    if row is None:
        raise _missing(vector_id)
    return row


async def newest_facts(
    store: ItemStore, where: TenantFilter, limit: int, as_of: int | None = None
) -> list[MemoryRow]:
    """The tenant's `limit` newest active facts, newest first (the reference's listing also
    returned deleted and superseded ones: a deleted memory must not come back); with `as_of`
    (ms), the facts that were true then, one replaced since included."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if limit < 1:
        raise InputRejected("limit must be at least 1")
    return await store.newest(exact(where), "fact", limit, as_of)


async def recent_items(
    store: ItemStore, where: TenantFilter, *, source: str | None, limit: int
) -> list[MemoryRow]:
    """The tenant's `limit` newest rows of `source` (None: of every source), newest first,
    for looking at what a memory holds: replaced facts included (their `invalid_at` and
    `superseded_by` say when and by what), deleted rows never. Exact tenant: a filter
    without a user reads only the agent's user-less rows."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if limit < 1:
        raise InputRejected("limit must be at least 1")
    return await store.newest(exact(where), source, limit, include_superseded=True)


async def _embed(embedder: Embedder, content: str) -> Embedded:
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
) -> MemoryRow:
    """Edit a visible row; returns it after the change (`updatedAt = at`).

    - `content` is trimmed; only when it differs from the stored content is it re-embedded
      (input type "document") and stored with the embedder's model (the dimension follows
      from the vector). Blank content is rejected.
    - `metadata` is merged shallowly into the stored metadata; system keys (`SYSTEM_KEYS`)
      in it are ignored, keys with "." or a leading "$" are rejected.
    - `retention` (non-blank), `confidence` (in [0, 1]) and `status` (one of
      `EDITABLE_STATUSES`) are written into metadata; "superseded" sets `invalidAt = at`,
      "active"/"archived" clear `invalidAt`/`supersededBy`.

    Raises InputRejected (bad input, checked before any read) or NotFound (not visible)."""
    where = _checked(where, vector_id)
    sets = _edits(metadata, retention, confidence, status)
    new_content = None if content is None else content.strip()
    if new_content == "":
        raise InputRejected("content must not be blank")
    row = await get_item(store, where, vector_id)
    validity = None if status is None else _status_change(row, status, at)
    text = None
    if new_content is not None and new_content != row.content:
        text = await _embed(embedder, new_content)
    patch = RowPatch(at=at, text=text, metadata=sets, validity=validity)
    return _must(await store.update(where, vector_id, patch), vector_id)


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
    store: ItemStore, where: TenantFilter, vector_id: str, *, hard: bool = False, at: int
) -> MemoryRow:
    """Soft (default): status "deleted", `metadata.deletedAt = at`, `decayScore = 0`; the row
    then behaves as missing (a second soft delete is NotFound) and decay jobs must skip it
    (`DECAY_SKIPS`). Hard: the row is removed, soft-deleted ones included. Returns the row
    after a soft delete, the removed row after a hard one. NotFound when not visible."""
    where = _checked(where, vector_id)
    if hard:
        row = await store.hard_delete(where, vector_id)
    else:
        row = await store.soft_delete(where, vector_id, at)
    return _must(row, vector_id)


async def resolve_conflict(
    store: ItemStore,
    embedder: Embedder,
    where: TenantFilter,
    vector_id: str,
    *,
    resolution: str,
    winning_id: str | None = None,
    reason: str | None = None,
    at: int,
) -> list[MemoryRow]:
    """Settle a conflict about row `vector_id` (the loser for supersede/merge). Every
    resolution records `conflictResolution`, `conflictResolvedAt = at` and, when given,
    `winningMemoryId` and `conflictReason` in the row's metadata.

    - "keep" / "ignore": only that record; status and validity are unchanged.
    - "supersede": `winning_id` required; the row becomes status "superseded",
      `supersededBy = winning_id`, `invalidAt = at`. The winner is not touched.
    - "merge": `winning_id` required; the loser's trimmed content is appended to the
      winner's on a new line (skipped when the winner's content already contains it), the
      winner is re-embedded when its content changed and gets the loser's id appended to
      `metadata.mergedFrom`; then the loser is superseded as above. The winner is written
      first: if the second write fails the loser stays current (a duplicate, never a loss).

    A given `winning_id` must be a visible, current (not superseded) row of the same `where`,
    other than `vector_id`, else NotFound / InputRejected; supersede and merge also need a
    current loser. Returns the changed rows: the loser, then the winner for merge."""
    where = _checked(where, vector_id)
    if resolution not in RESOLUTIONS:
        raise InputRejected(f"resolution must be one of {', '.join(RESOLUTIONS)}")
    if resolution in ("supersede", "merge") and winning_id is None:
        raise InputRejected(f"{resolution} needs a winning id")
    if winning_id is not None and winning_id == vector_id:
        raise InputRejected("a row cannot win against itself")
    row = await get_item(store, where, vector_id)
    winner = await get_item(store, where, winning_id) if winning_id is not None else None
    if winner is not None and winner.status in INACTIVE_STATUSES:
        raise InputRejected("the winning row is superseded")
    record: dict[str, Any] = {"conflictResolution": resolution, "conflictResolvedAt": at}
    if winning_id is not None:
        record["winningMemoryId"] = winning_id
    if reason is not None and reason.strip():
        record["conflictReason"] = reason.strip()
    if winner is None or resolution in ("keep", "ignore"):
        return [
            _must(await store.update(where, vector_id, RowPatch(at, metadata=record)), vector_id)
        ]
    if row.status in INACTIVE_STATUSES:
        raise InputRejected("the row is already superseded")
    changed: list[MemoryRow] = []
    if resolution == "merge":
        patch = await _merged(embedder, winner, row, at)
        changed.append(_must(await store.update(where, winner.vector_id, patch), winner.vector_id))
    loser = RowPatch(
        at,
        metadata={**record, "status": "superseded"},
        validity=(at, winner.vector_id),
    )
    return [_must(await store.update(where, vector_id, loser), vector_id), *changed]


async def _merged(embedder: Embedder, winner: MemoryRow, loser: MemoryRow, at: int) -> RowPatch:
    addition = loser.content.strip()
    text = None
    if addition and addition not in winner.content:
        text = await _embed(embedder, winner.content.rstrip() + MERGE_SEPARATOR + addition)
    merged_from = winner.metadata.get("mergedFrom")
    history = list(merged_from) if isinstance(merged_from, list) else []
    return RowPatch(at, text=text, metadata={"mergedFrom": [*history, loser.vector_id]})


def _must(row: MemoryRow | None, vector_id: str) -> MemoryRow:
    """`row`, or NotFound (also when the row was deleted between a read and a write)."""
    if row is None:
        raise _missing(vector_id)
    return row


def changed_scope(row: MemoryRow) -> Scope:
    """The scope to announce a change of `row` under (`MemoryChanged.scope`)."""
    return scope_of(row.scope)


def changed_layers(rows: Sequence[MemoryRow]) -> list[str]:
    """The search layers a change of these rows affects (`MemoryChanged.layers`)."""
    graph = any(r.source == "fact" or r.metadata.get("layer") == "graph" for r in rows)
    return ["graph", "vectors"] if graph else ["vectors"]
