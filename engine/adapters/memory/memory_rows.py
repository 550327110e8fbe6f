"""In-memory `MemoryStore` (unit tests, the contract suite's twin).

Its rows are kept in a `StampedRows` mapping: every write through it (this store's, the item
store's over the same rows, maintenance's `put`/`drop`) marks the row changed at the clock's
time, and a removal moves the agent's epoch, as `changedAt` and `memory_epochs` do on MongoDB
(`engine.adapters.mongo.changes`)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import replace

import numpy as np

from engine.adapters.memory.erasure import drop_user
from engine.ports import VectorStats
from engine.records import INACTIVE_STATUSES, MemoryRow, Vector
from engine.scoping import TenantFilter


class StampedRows(MutableMapping[str, MemoryRow]):
    """Rows by id, with when each was last written and a removal count per agent."""

    def __init__(self) -> None:
        self._rows: dict[str, MemoryRow] = {}
        self.changed_at: dict[str, int] = {}
        self.epochs: dict[str, int] = {}

    def __getitem__(self, key: str) -> MemoryRow:
        return self._rows[key]

    def __setitem__(self, key: str, row: MemoryRow) -> None:
        self._rows[key] = row
        self.changed_at[key] = time.time_ns() // 1_000_000

    def set_unmarked(self, key: str, row: MemoryRow) -> None:
        """Write without marking a change (an access count: `MemoryStore.bump_access`)."""
        self._rows[key] = row

    def __delitem__(self, key: str) -> None:
        row = self._rows.pop(key)
        self.changed_at.pop(key, None)
        agent = row.scope.agent_wallet
        self.epochs[agent] = self.epochs.get(agent, 0) + 1

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


class InMemoryMemoryStore:
    def __init__(self) -> None:
        self._rows = StampedRows()

    def rows(self) -> list[MemoryRow]:
        """Every row (for in-memory maintenance and tests)."""
        return list(self._rows.values())

    def row(self, vector_id: str) -> MemoryRow | None:
        return self._rows.get(vector_id)

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        return len(drop_user(self._rows, lambda r: r.scope, agent_wallet, user_address))

    def put(self, row: MemoryRow) -> None:
        self._rows[row.vector_id] = row

    def drop(self, vector_id: str) -> None:
        self._rows.pop(vector_id, None)

    async def insert_if_absent(self, row: MemoryRow) -> bool:
        if row.vector_id in self._rows:
            return False
        self._rows[row.vector_id] = replace(row, metadata=dict(row.metadata))
        return True

    async def exists(self, vector_id: str) -> bool:
        return vector_id in self._rows

    async def insert_many_if_absent(self, rows: Sequence[MemoryRow]) -> set[str]:
        return {row.vector_id for row in rows if await self.insert_if_absent(row)}

    async def fill_embeddings(
        self,
        model: str,
        vectors: Mapping[str, Vector],
        units: Mapping[str, Vector] | None = None,
    ) -> int:
        filled = 0
        own = units or {}
        for vector_id, v in vectors.items():
            row = self._rows.get(vector_id)
            if row is None or not row.pending or row.embedding_model != model or not v.size:
                continue
            mine = own.get(vector_id)
            self._rows[vector_id] = replace(
                row,
                embedding=np.asarray(v, dtype=np.float32),
                units=None if mine is None or not mine.size else mine.astype(np.float32),
            )
            filled += 1
        return filled

    async def status_of(self, vector_id: str) -> str | None:
        row = self._rows.get(vector_id)
        return None if row is None else row.status

    async def revive(self, vector_id: str, at: int) -> bool:
        row = self._rows.get(vector_id)
        if row is None or row.status != "deleted":
            return False
        self._rows[vector_id] = replace(
            row, created_at=at, metadata={**row.metadata, "status": "active"}
        )
        return True

    async def bump_access(self, vector_ids: Sequence[str], at: int) -> int:
        bumped = 0
        for vector_id in vector_ids:
            row = self._rows.get(vector_id)
            if row is not None:
                self._rows.set_unmarked(vector_id, replace(row, access_count=row.access_count + 1))
                bumped += 1
        return bumped

    async def active_rows(
        self,
        where: TenantFilter,
        *,
        sources: Sequence[str] | None = None,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        hidden = ("deleted",) if include_superseded else INACTIVE_STATUSES
        return [
            row
            for row in self._rows.values()
            if where.admits(row.scope, row.source)
            and row.status not in hidden
            and (sources is None or row.source in sources)
        ]

    async def changed_rows(self, where: TenantFilter, since: int) -> list[MemoryRow]:
        stamps = self._rows.changed_at
        return [
            row
            for vid, row in self._rows.items()
            if stamps.get(vid, 0) >= since and where.admits(row.scope, row.source)
        ]

    async def epoch(self, agent_wallet: str) -> int:
        return self._rows.epochs.get(agent_wallet, 0)

    async def stats(self, agent_wallet: str, user_address: str | None = None) -> VectorStats:
        rows = [
            r
            for r in self._rows.values()
            if r.scope.agent_wallet == agent_wallet
            and (user_address is None or r.scope.user_address == user_address)
            and r.status not in INACTIVE_STATUSES
        ]
        if not rows:
            return VectorStats()
        by_source: dict[str, int] = {}
        for r in rows:
            by_source[r.source] = by_source.get(r.source, 0) + 1
        return VectorStats(
            total=len(rows),
            avg_decay_score=sum(r.decay_score for r in rows) / len(rows),
            oldest=min(r.created_at for r in rows),
            newest=max(r.created_at for r in rows),
            by_source=by_source,
        )

    async def slot_rows(self, where: TenantFilter, slot: str) -> list[MemoryRow]:
        return [
            row
            for row in self._rows.values()
            if where.admits(row.scope, row.source)
            and row.source == "fact"
            and row.status != "deleted"
            and row.metadata.get("slot") == slot
        ]

    async def set_slot_if_absent(self, vector_id: str, where: TenantFilter, slot: str) -> bool:
        row = self._rows.get(vector_id)
        if (
            row is None
            or row.source != "fact"
            or not where.admits(row.scope, row.source)
            or row.metadata.get("slot") is not None
        ):
            return False
        self._rows[vector_id] = replace(row, metadata={**row.metadata, "slot": slot})
        return True

    async def set_validity(
        self, vector_id: str, invalid_at: int | None, superseded_by: str | None
    ) -> None:
        row = self._rows.get(vector_id)
        if row is not None:
            status = "superseded" if invalid_at is not None else "active"
            self._rows[vector_id] = replace(
                row,
                invalid_at=invalid_at,
                superseded_by=superseded_by,
                metadata={**row.metadata, "status": status},
            )
