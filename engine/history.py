"""Item history: every change of a long-term item (a row of `memory`) with its time, its cause
and its actor (`engine.records.ItemChange`, kept by an `engine.ports.ItemHistory`).

Kinds (`CHANGE_KINDS`):

* `created` — a fact remembered or extracted, an entity, a knowledge chunk (the new text);
* `updated` — an item update: old and new text when the content changed, and in `details`
  the metadata keys set (`set`) with their previous values (`previous`);
* `superseded` — replaced: by a newer fact of its slot, a conflict resolution or
  consolidation. `details` links the validity interval: `validFrom` (the item's
  `createdAt`), `invalidAt` and `supersededBy` (the item that replaced it), as stored on the
  row;
* `reinstated` — current again (its successor is gone), `invalidAt` cleared;
* `merged` — a conflict merged another item into this one (old and new text, `mergedFrom`);
* `resolved` — a conflict settled without change (`keep`, `ignore`);
* `deleted` — soft-deleted; `purged` — removed for good (hard delete, cleanup): the texts of
  the item's earlier entries are erased then (`ItemHistory.forget`), so a purged item's
  words are gone from the history too; what happened to it, when, why and by whom stays;
* `restored` — a soft-deleted item made visible again (an item restore, or the same fact
  remembered or extracted again).

Entries are recorded after the change they describe. An entry's id is derived from the
tenant, the item, the kind, the cause and the time, so a redelivered event records its change
once; a crash between a change and its entry loses that one entry, never the change.

The history of an item that has none recorded (a turn's `session` row, a row written before
history existed) starts with a `created` entry derived from the row (`details.derived`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.errors import InputRejected, NotFound
from engine.ports import ItemHistory
from engine.records import Cause, ItemChange, MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from schemas.ids import h32

CHANGE_KINDS = (
    "created",
    "updated",
    "superseded",
    "reinstated",
    "merged",
    "resolved",
    "deleted",
    "purged",
    "restored",
)
MAX_HISTORY = 500
"""The most entries one history read returns (the newest)."""
SPOKEN_DETAILS = ("set", "previous", "reason")
"""Details that hold what a caller wrote (metadata values, a conflict's reason): erased with
the texts when an item is purged."""


def change(
    item_id: str,
    scope: ScopeFields,
    kind: str,
    cause: Cause,
    at: int,
    *,
    old: str | None = None,
    new: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> ItemChange:
    """One change of `item_id` (of the tenant `scope`), its id derived from the tenant, the
    item, the kind, the cause and `at` (ms since epoch)."""
    if kind not in CHANGE_KINDS:
        raise ValueError(f"unknown change kind {kind!r}")
    tenant = [scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id]
    change_id = "chg_" + h32(json.dumps([*tenant, item_id, kind, cause.kind, cause.id, at]))
    return ItemChange(change_id, item_id, scope, kind, at, cause, old, new, dict(details or {}))


def of_row(
    row: MemoryRow,
    kind: str,
    cause: Cause,
    at: int,
    *,
    old: str | None = None,
    new: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> ItemChange:
    """`change` of a row."""
    return change(row.vector_id, row.scope, kind, cause, at, old=old, new=new, details=details)


def validity(row: MemoryRow, invalid_at: int | None, superseded_by: str | None) -> dict[str, Any]:
    """The validity interval of a row as a history entry's details (see the module doc)."""
    return {"validFrom": row.created_at, "invalidAt": invalid_at, "supersededBy": superseded_by}


@dataclass(frozen=True, slots=True)
class Ledger:
    """Where changes are written down (`history`) and why they happen (`cause`): given to
    the functions that change items."""

    history: ItemHistory
    cause: Cause

    async def note(self, changes: Sequence[ItemChange]) -> None:
        if changes:
            await self.history.record(changes)

    async def purged(self, rows: Sequence[tuple[str, ScopeFields]], at: int) -> None:
        """Record the purge of each (item id, tenant) and erase what its history said."""
        if not rows:
            return
        await self.note([change(i, scope, "purged", self.cause, at) for i, scope in rows])
        by_tenant: dict[ScopeFields, list[str]] = {}
        for item_id, scope in rows:
            by_tenant.setdefault(replace(scope, thread_id=None), []).append(item_id)
        for scope, ids in by_tenant.items():
            exact = TenantFilter(scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id)
            await self.history.forget(exact, ids)


async def noted(ledger: Ledger | None, changes: Sequence[ItemChange]) -> None:
    """Record `changes` when there is a ledger (callers without one keep no history: the
    engine's unit tests of the mechanics)."""
    if ledger is not None:
        await ledger.note(changes)


@dataclass(frozen=True, slots=True)
class ItemHistoryView:
    """An item's history: `changes` oldest first, and the item as it is now (`item`: None
    when it is deleted or purged)."""

    item_id: str
    changes: list[ItemChange]
    item: MemoryRow | None


def derived_creation(row: MemoryRow, changes: Sequence[ItemChange]) -> ItemChange:
    """The `created` entry of a row with none recorded: its creation time, the cause its
    metadata names (the event or turn that wrote it) and its first text (the old text of
    its first recorded content change, else its content)."""
    meta = row.metadata
    event = meta.get("eventId")
    turn = meta.get("sourceTurnId") or meta.get("turnId")
    if isinstance(event, str):
        cause = Cause("event", event, "written", row.source)
    elif isinstance(turn, str):
        cause = Cause("event", turn, "turn", row.source)
    else:
        cause = Cause("event", "", "written", row.source)
    first = next((c.old_content for c in changes if c.old_content is not None), row.content)
    return change(
        row.vector_id, row.scope, "created", cause, row.created_at, new=first,
        details={"derived": True},
    )  # fmt: skip


async def item_history(
    history: ItemHistory,
    current: MemoryRow | None,
    where: TenantFilter,
    item_id: str,
    *,
    limit: int = MAX_HISTORY,
) -> ItemHistoryView:
    """The history of `item_id` within `where` (exactly its tenant). `current` is the item
    as the caller read it within the same `where` (None: not visible). NotFound when there
    is neither a recorded change nor a visible item, so another tenant's item id answers
    exactly like a missing one."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if not item_id.strip():
        raise InputRejected("id is required")
    if not 1 <= limit <= MAX_HISTORY:
        raise InputRejected(f"limit must be in [1, {MAX_HISTORY}]")
    changes = await history.of_item(where.exact(), item_id, limit)
    if not changes and current is None:
        raise NotFound(f"memory item {item_id!r} not found")
    complete = len(changes) < limit
    if current is not None and complete and not any(c.kind == "created" for c in changes):
        changes = [derived_creation(current, changes), *changes]
    return ItemHistoryView(item_id, changes, current)
