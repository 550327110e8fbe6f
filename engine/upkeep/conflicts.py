"""Conflict resolution between two rows of one tenant (reference §11): keep, ignore,
supersede or merge, within an explicit tenant like every item operation
(`engine.upkeep.items`)."""

from __future__ import annotations

from typing import Any, Literal

from engine.errors import InputRejected
from engine.history import Ledger, of_row
from engine.history import validity as validity_details
from engine.ports import Embedder
from engine.records import INACTIVE_STATUSES, ItemChange, MemoryRow
from engine.scoping import TenantFilter
from engine.upkeep.items import ItemStore, RowPatch, checked, embed, get_item, must

Resolution = Literal["supersede", "keep", "merge", "ignore"]
RESOLUTIONS: tuple[Resolution, ...] = ("supersede", "keep", "merge", "ignore")
MERGE_SEPARATOR = "\n"


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
    ledger: Ledger | None = None,
) -> list[MemoryRow]:
    """Settle a conflict about row `vector_id` (the loser for supersede/merge). Every
    resolution records `conflictResolution`, `conflictResolvedAt = at` and, when given,
    `winningMemoryId` and `conflictReason` in the row's metadata; in the `ledger`: `resolved`
    (keep, ignore), `superseded` with its validity (the loser), `merged` with the old and
    new text (the winner of a merge).

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
    where = checked(where, vector_id)
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
        kept = must(await store.update(where, vector_id, RowPatch(at, metadata=record)), vector_id)
        if ledger is not None:
            await ledger.note([of_row(kept, "resolved", ledger.cause, at, details=record)])
        return [kept]
    if row.status in INACTIVE_STATUSES:
        raise InputRejected("the row is already superseded")
    changed: list[MemoryRow] = []
    notes: list[ItemChange] = []
    if resolution == "merge":
        patch = await _merged(embedder, winner, row, at)
        merged = must(await store.update(where, winner.vector_id, patch), winner.vector_id)
        changed.append(merged)
        if ledger is not None:
            old, new = (winner.content, merged.content) if patch.text else (None, None)
            details = {"mergedFrom": row.vector_id, "resolution": resolution}
            notes.append(
                of_row(merged, "merged", ledger.cause, at, old=old, new=new, details=details)
            )
    loser = RowPatch(
        at,
        metadata={**record, "status": "superseded"},
        validity=(at, winner.vector_id),
    )
    replaced = must(await store.update(where, vector_id, loser), vector_id)
    if ledger is not None:
        details = {**validity_details(row, at, winner.vector_id), "resolution": resolution}
        if "conflictReason" in record:
            details["reason"] = record["conflictReason"]
        # the loser first: the order the rows are returned in
        notes.insert(0, of_row(replaced, "superseded", ledger.cause, at, details=details))
        await ledger.note(notes)
    return [replaced, *changed]


async def _merged(embedder: Embedder, winner: MemoryRow, loser: MemoryRow, at: int) -> RowPatch:
    addition = loser.content.strip()
    text = None
    if addition and addition not in winner.content:
        text = await embed(embedder, winner.content.rstrip() + MERGE_SEPARATOR + addition)
    merged_from = winner.metadata.get("mergedFrom")
    history = list(merged_from) if isinstance(merged_from, list) else []
    return RowPatch(at, text=text, metadata={"mergedFrom": [*history, loser.vector_id]})
