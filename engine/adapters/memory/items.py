"""`ItemStore` in memory, for unit tests and the contract suite (the MongoDB one is
`engine.adapters.mongo.items`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from engine.adapters.memory.memory_rows import InMemoryMemoryStore
from engine.records import INACTIVE_STATUSES, MemoryRow
from engine.scoping import TenantFilter
from engine.upkeep.item_tags import holds_tags
from engine.upkeep.item_writes import RowWrite
from engine.upkeep.items import RowPatch, apply_patch, exact, soft_delete_patch


class InMemoryItemStore(InMemoryMemoryStore):
    """`ItemStore` (and `MemoryStore`) over one dict of rows, for unit tests."""

    def _visible(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        row = self._rows.get(vector_id)
        if row is None or row.status == "deleted" or not exact(where).admits(row.scope):
            return None
        return row

    async def get(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        return self._visible(where, vector_id)

    async def update(
        self, where: TenantFilter, vector_id: str, patch: RowPatch
    ) -> MemoryRow | None:
        row = self._visible(where, vector_id)
        if row is None:
            return None
        self._rows[vector_id] = apply_patch(row, patch)
        return self._rows[vector_id]

    async def soft_delete(self, where: TenantFilter, vector_id: str, at: int) -> MemoryRow | None:
        return await self.update(where, vector_id, soft_delete_patch(at))

    async def hard_delete(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        row = self._rows.get(vector_id)
        if row is None or not exact(where).admits(row.scope):
            return None
        return self._rows.pop(vector_id)

    async def get_deleted(self, where: TenantFilter, vector_id: str) -> MemoryRow | None:
        row = self._rows.get(vector_id)
        if row is None or row.status != "deleted" or not exact(where).admits(row.scope):
            return None
        return row

    async def restore(
        self, where: TenantFilter, vector_id: str, patch: RowPatch
    ) -> MemoryRow | None:
        row = await self.get_deleted(where, vector_id)
        if row is None:
            return None
        self._rows[vector_id] = apply_patch(row, patch)
        return self._rows[vector_id]

    async def newest(
        self,
        where: TenantFilter,
        source: str | None,
        limit: int,
        as_of: int | None = None,
        *,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        admitted = exact(where)
        hidden = ("deleted",) if include_superseded else INACTIVE_STATUSES
        rows = [
            r
            for r in self._rows.values()
            if source in (None, r.source)
            and (r.valid_at(as_of) if as_of is not None else r.status not in hidden)
            and admitted.admits(r.scope)
        ]
        rows.sort(key=lambda r: (r.created_at, r.vector_id), reverse=True)
        return rows[:limit]

    async def scan(
        self, where: TenantFilter, tagged: Mapping[str, str], after: str | None, limit: int
    ) -> list[MemoryRow]:
        admitted = exact(where)
        rows = sorted(
            (
                r
                for r in self._rows.values()
                if r.status not in INACTIVE_STATUSES
                and admitted.admits(r.scope)
                and (after is None or r.vector_id > after)
                and holds_tags(r.metadata, tagged)
            ),
            key=lambda r: r.vector_id,
        )
        return rows[:limit]

    async def read_rows(self, where: TenantFilter, vector_ids: Sequence[str]) -> list[MemoryRow]:
        admitted = exact(where)
        found = (self._rows.get(i) for i in sorted(set(vector_ids)))
        return [r for r in found if r is not None and admitted.admits(r.scope)]

    async def write_rows(self, where: TenantFilter, writes: Sequence[RowWrite]) -> None:
        for w in writes:
            if w.new is not None:
                self._rows.setdefault(w.vector_id, w.new)
                continue
            row = self._rows.get(w.vector_id)
            if row is None or w.patch is None or not exact(where).admits(row.scope):
                continue
            if w.visible_only and row.status == "deleted":
                continue
            after = apply_patch(row, w.patch)
            if w.revive:
                metadata = {k: v for k, v in after.metadata.items() if k != "deletedAt"}
                after = replace(after, created_at=w.patch.at, metadata=metadata)
            self._rows[w.vector_id] = after
