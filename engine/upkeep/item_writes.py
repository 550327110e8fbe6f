"""Many item writes of one tenant at once (the items group's `write` and `read`, issue 30).

An adapter whose framework sends thousands of small writes (a LangGraph store under load)
cannot afford a request, a read and a write per row. `write_items` applies a list of writes
(distinct ids, `ItemWrite` of `schemas.item_writes`) with one read of the rows they name,
one embedding call for the texts that changed and one bulk write (`BulkItemStore`):

* `put` creates the row when absent (a `source: "fact"` row of the tenant, as a remembered
  fact, its `metadata.type` the write's), brings a soft-deleted row back as new (created at
  `at`, decay 1), or updates a visible one (its creation time kept); in every case the row
  is active afterwards with the write's content and its metadata merged in. Last write wins:
  a put after a delete revives, a delete after a put deletes.
* `patch` merges metadata into a visible row (nothing when it is absent or deleted): what a
  TTL refresh writes, without touching a value a concurrent put replaced.
* `delete` soft-deletes a visible row (nothing when it is absent or deleted).

Every write's filter carries the tenant exactly, so a row of another tenant is never
touched (a put naming an id another tenant's row holds leaves it alone: ids embed their
tenant, so only a forged id meets one).
Puts and deletes are recorded in the item history (created, updated, restored, deleted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from engine.errors import InputRejected
from engine.history import Ledger, of_row
from engine.ingest.remember import stored_fact_type
from engine.ports import Embedder
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.items import (
    SYSTEM_KEYS,
    Embedded,
    ItemStore,
    RowPatch,
    exact,
    soft_delete_patch,
)

WriteKind = Literal["put", "patch", "delete"]


@dataclass(frozen=True, slots=True)
class Write:
    """One write of `write_items` (the engine's form of `schemas.item_writes.ItemWrite`)."""

    vector_id: str
    kind: WriteKind
    content: str | None = None
    metadata: Mapping[str, Any] | None = None
    type: str = "note"


@dataclass(frozen=True, slots=True)
class RowWrite:
    """What the store writes for one row: `new` inserted (absent before), or `patch` applied
    to the row of the tenant; `revive` also makes a soft-deleted row active again, created
    at `patch.at` (`deletedAt` removed); `visible_only` applies the patch only while the row
    is not deleted (a delete, a patch)."""

    vector_id: str
    new: MemoryRow | None = None
    patch: RowPatch | None = None
    revive: bool = False
    visible_only: bool = False


class BulkItemStore(ItemStore, Protocol):
    """An `ItemStore` that also reads and writes many rows of a tenant at once."""

    async def read_rows(self, where: TenantFilter, vector_ids: Sequence[str]) -> list[MemoryRow]:
        """The rows among `vector_ids` the filter admits exactly, any status, by id."""
        ...

    async def write_rows(self, where: TenantFilter, writes: Sequence[RowWrite]) -> None:
        """Apply `writes` (distinct rows), each with a filter of the tenant exactly, in one
        bulk write."""
        ...


def caller_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The metadata a write merges: system keys (`SYSTEM_KEYS`) dropped, keys checked."""
    out: dict[str, Any] = {}
    for key, value in (metadata or {}).items():
        if not key or "." in key or key.startswith("$"):
            raise InputRejected(f"metadata key {key!r} is not allowed")
        if key not in SYSTEM_KEYS:
            out[key] = value
    return out


def _new_row(w: Write, text: Embedded, fields: ScopeFields, at: int) -> MemoryRow:
    """A new fact row of the tenant, as `engine.ingest.remember` stores a remembered one."""
    metadata = {
        **caller_metadata(w.metadata),
        "type": w.type,
        "source": "agent_loop",
        "layer": "graph",
        "factHash": w.vector_id.removeprefix("fact_"),
        "factType": stored_fact_type(w.type),
        "confidence": 1.0,
        "extractor": "explicit",
        "status": "active",
    }
    return MemoryRow(
        vector_id=w.vector_id,
        scope=fields,
        content=text.content,
        embedding=text.embedding,
        embedding_model=text.model,
        source="fact",
        created_at=at,
        metadata=metadata,
    )


async def write_items(
    store: BulkItemStore,
    embedder: Embedder,
    where: TenantFilter,
    fields: ScopeFields,
    writes: Sequence[Write],
    *,
    at: int,
    ledger: Ledger | None = None,
) -> list[MemoryRow]:
    """Apply `writes` (distinct ids) to the tenant of `where` (see the module docstring);
    new rows carry the tenant `fields`. Returns the rows the writes found before (any
    status): what the caller announces the change of, with the new ones.
    InputRejected for a put without content or a bad metadata key (before any write)."""
    where = exact(where)
    for w in writes:
        if w.kind == "put" and not (w.content or "").strip():
            raise InputRejected(f"put of {w.vector_id!r} needs content")
        caller_metadata(w.metadata)
    before = {r.vector_id: r for r in await store.read_rows(where, [w.vector_id for w in writes])}
    texts = {
        (w.content or "").strip()
        for w in writes
        if w.kind == "put"
        and (w.vector_id not in before or before[w.vector_id].content != (w.content or "").strip())
    }
    ordered = sorted(texts)
    vectors = await embedder.embed(ordered, "document") if ordered else []
    embedded = {t: Embedded(t, v, embedder.model) for t, v in zip(ordered, vectors, strict=True)}
    planned: list[RowWrite] = []
    changes = []
    touched: list[MemoryRow] = []
    cause = None if ledger is None else ledger.cause
    for w in writes:
        row = before.get(w.vector_id)
        if w.kind == "put":
            content = (w.content or "").strip()
            if row is None:
                new = _new_row(w, embedded[content], fields, at)
                planned.append(RowWrite(w.vector_id, new=new))
                touched.append(new)
                kind = "created"
            else:
                sets = {**caller_metadata(w.metadata), "status": "active"}
                revive = row.status == "deleted"
                if revive:
                    sets["deletedAt"] = None
                patch = RowPatch(
                    at=at,
                    text=embedded.get(content) if content != row.content else None,
                    metadata=sets,
                    decay_score=1.0 if revive else None,
                )
                planned.append(RowWrite(w.vector_id, patch=patch, revive=revive))
                touched.append(row)
                kind = "restored" if revive else "updated"
            if cause is not None:
                changes.append(of_row(touched[-1], kind, cause, at))
        elif row is not None and row.status != "deleted":
            if w.kind == "delete":
                patch = soft_delete_patch(at)
                if cause is not None:
                    changes.append(of_row(row, "deleted", cause, at))
            else:
                patch = RowPatch(at=at, metadata=caller_metadata(w.metadata))
            planned.append(RowWrite(w.vector_id, patch=patch, visible_only=True))
            touched.append(row)
    if planned:
        await store.write_rows(where, planned)
    if ledger is not None:
        await ledger.note(changes)
    return touched
