"""In-memory `WorkingStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.adapters.memory.erasure import drop_user
from engine.records import WORKING_TURN_ROWS, WorkingAppend, WorkingBuffer
from engine.scoping import TenantFilter
from engine.turn_guard import TurnGuard


class InMemoryWorkingStore:
    def __init__(self) -> None:
        self._docs: dict[str, WorkingBuffer] = {}
        self._guards: dict[str, TurnGuard] = {}

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        keys = drop_user(self._docs, lambda d: d.scope, agent_wallet, user_address)
        for key in keys:
            self._guards.pop(key, None)
        return len(keys)

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        key = lines.scope.document_key(lines.session_id)
        taken, self._guards[key] = self._guards.get(key, TurnGuard()).take(
            [(lines.turn_id, lines.at)]
        )
        if not taken:
            return False
        old = self._docs.get(key)
        newest_first = [*reversed(lines.lines), *(old.lines if old else [])][:keep]
        self._docs[key] = WorkingBuffer(
            session_id=lines.session_id,
            scope=old.scope if old else lines.scope,
            lines=newest_first,
            state={**(old.state if old else {}), **lines.state},
            last_accessed_at=max(lines.at, old.last_accessed_at) if old else lines.at,
            created_at=min(lines.at, old.created_at) if old else lines.at,
            turn_rows=[
                *(old.turn_rows if old else []),
                *([lines.row_id] if lines.row_id else []),
            ][-WORKING_TURN_ROWS:],
        )
        return True

    async def append_many(self, appends: Sequence[WorkingAppend], keep: int) -> list[bool]:
        return [await self.append(lines, keep) for lines in appends]

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingBuffer]:
        docs = [d for d in self._docs.values() if where.admits(d.scope)]
        docs.sort(key=lambda d: (-d.last_accessed_at, d.session_id))
        return docs[:limit]
