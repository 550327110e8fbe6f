"""In-memory `PatternCounter` and `SkillStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

import builtins
from collections import deque
from dataclasses import dataclass, field, replace

from engine.adapters.memory.erasure import drop_user
from engine.ingest.outcomes import Outcome
from engine.ingest.patterns import TURN_IDS_KEPT, PatternSeed, PatternState, to_record
from engine.ingest.skills import Skill
from engine.ports import PatternStore
from engine.records import PatternRecord, Vector
from engine.scoping import TenantFilter


@dataclass
class _Counted:
    state: PatternState
    turn_ids: deque[str] = field(default_factory=lambda: deque(maxlen=TURN_IDS_KEPT))
    embedding: Vector | None = None
    embedding_model: str | None = None

    def record(self) -> PatternRecord:
        return replace(
            to_record(self.state), embedding=self.embedding, embedding_model=self.embedding_model
        )


class InMemoryPatternCounter:
    """`mirror`, when given, receives every updated pattern as a `PatternRecord`, so an
    in-memory patterns layer sees what was counted (as Mongo's shared collection does)."""

    def __init__(self, mirror: PatternStore | None = None) -> None:
        self._rows: dict[str, _Counted] = {}
        self._mirror = mirror

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        return len(drop_user(self._rows, lambda r: r.state.scope, agent_wallet, user_address))

    async def record_execution(
        self, pattern: PatternSeed, *, turn_id: str, succeeded: Outcome, at: int
    ) -> bool:
        row = self._rows.get(pattern.pattern_id)
        if row is None:
            state = PatternState(
                pattern_id=pattern.pattern_id,
                scope=pattern.scope,
                steps=pattern.steps,
                executions=0,
                successes=0,
                last_executed=at,
                created_at=at,
            )
            row = self._rows[pattern.pattern_id] = _Counted(state)
        elif turn_id in row.turn_ids:
            return False
        row.turn_ids.append(turn_id)
        row.state = replace(
            row.state,
            executions=row.state.executions + 1,
            successes=row.state.successes + int(succeeded is True),
            unknown=row.state.unknown + int(succeeded is None),
            last_executed=max(row.state.last_executed, at),
            created_at=min(row.state.created_at, at),
        )
        if self._mirror is not None:
            await self._mirror.upsert(row.record())
        return True

    async def get(self, where: TenantFilter, pattern_id: str) -> PatternState | None:
        row = self._rows.get(pattern_id)
        return row.state if row is not None and where.admits(row.state.scope) else None

    async def list(self, where: TenantFilter, limit: int) -> builtins.list[PatternState]:
        states = [r.state for r in self._rows.values() if where.admits(r.state.scope)]
        states.sort(key=lambda s: (-s.success_rate, -s.executions, -s.last_executed, s.pattern_id))
        return states[:limit]

    async def set_embedding(self, pattern_id: str, embedding: Vector, model: str) -> bool:
        row = self._rows.get(pattern_id)
        if row is None or row.embedding is not None:
            return False
        row.embedding, row.embedding_model = embedding, model
        if self._mirror is not None:
            await self._mirror.upsert(row.record())
        return True


class InMemorySkillStore:
    def __init__(self) -> None:
        self._rows: dict[str, Skill] = {}

    def drop_user(self, agent_wallet: str, user_address: str) -> int:
        return len(drop_user(self._rows, lambda s: s.scope, agent_wallet, user_address))

    async def promote(self, skill: Skill) -> bool:
        if skill.skill_id in self._rows:
            return False
        self._rows[skill.skill_id] = skill
        return True

    async def get(self, where: TenantFilter, skill_id: str) -> Skill | None:
        skill = self._rows.get(skill_id)
        return skill if skill is not None and where.admits(skill.scope) else None

    async def list(self, where: TenantFilter, limit: int) -> builtins.list[Skill]:
        skills = [s for s in self._rows.values() if where.admits(s.scope)]
        skills.sort(key=lambda s: (-s.success_rate, -s.usage_count, -s.created_at, s.skill_id))
        return skills[:limit]
