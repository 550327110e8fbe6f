"""In-memory `PatternStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from engine.adapters.memory.erasure import drop_user
from engine.records import INACTIVE_STATUSES, PatternRecord
from engine.scoping import TenantFilter


class InMemoryPatternStore:
    def __init__(self) -> None:
        self._rows: dict[str, PatternRecord] = {}

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        return len(drop_user(self._rows, lambda r: r.scope, agent_wallet, user_address))

    async def upsert(self, pattern: PatternRecord) -> None:
        self._rows[pattern.pattern_id] = pattern

    async def active(self, where: TenantFilter, limit: int) -> list[PatternRecord]:
        rows = [
            p
            for p in self._rows.values()
            if where.admits(p.scope) and p.status not in INACTIVE_STATUSES
        ]
        rows.sort(key=lambda p: (-p.success_rate, -p.last_executed, p.pattern_id))
        return rows[:limit]
