"""In-memory `RelationStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.adapters.memory.erasure import drop_user
from engine.records import RelationRecord
from engine.scoping import TenantFilter


class InMemoryRelationStore:
    def __init__(self) -> None:
        self._rows: dict[str, RelationRecord] = {}

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        return len(drop_user(self._rows, lambda r: r.scope, agent_wallet, user_address))

    def rows(self) -> list[RelationRecord]:
        return list(self._rows.values())

    def row(self, relation_id: str) -> RelationRecord | None:
        return self._rows.get(relation_id)

    def put(self, relation: RelationRecord) -> None:
        self._rows[relation.relation_id] = relation

    def drop(self, relation_id: str) -> None:
        self._rows.pop(relation_id, None)

    async def insert_if_absent(self, relation: RelationRecord) -> bool:
        if relation.relation_id in self._rows:
            return False
        self._rows[relation.relation_id] = relation
        return True

    async def around(self, where: TenantFilter, entity_ids: Sequence[str]) -> list[RelationRecord]:
        wanted = set(entity_ids)
        rows = [
            r
            for r in self._rows.values()
            if where.admits(r.scope) and (r.source_id in wanted or r.target_id in wanted)
        ]
        return sorted(rows, key=lambda r: (r.created_at, r.relation_id))

    async def from_source(
        self, where: TenantFilter, source_id: str, type: str
    ) -> list[RelationRecord]:
        return [
            r
            for r in self._rows.values()
            if where.admits(r.scope) and r.source_id == source_id and r.type == type
        ]

    async def set_validity(self, relation_id: str, invalid_at: int | None) -> None:
        row = self._rows.get(relation_id)
        if row is not None:
            self._rows[relation_id] = replace(row, invalid_at=invalid_at)
