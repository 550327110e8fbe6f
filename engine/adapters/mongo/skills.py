"""MongoDB `SkillStore`: the `skills` collection, keyed by `skillId` (a promotion is an
insert, so a skill is stored once).

A skill stored before issue 17 has no `promotion` and is tagged `auto-promoted`: it reads as
a manual promotion (tags `pattern`, `promoted`, `manual`; creator `caller`), since a
caller's request was the only way either this code or the reference ever promoted one."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.documents import Doc, scope_of, tenant_query
from engine.adapters.mongo.schema import SKILLS
from engine.errors import DependencyFailed
from engine.ingest.skill_view import skill_view
from engine.ingest.skills import PROMOTIONS, Promotion, Skill
from engine.scoping import TenantFilter


def skill_document(s: Skill) -> Doc:
    """The stored skill (reference §9.3's shape, keyed by its id); the admin API shows it
    as is, without `_id` (`engine.ingest.skill_view`)."""
    return {"_id": s.skill_id, **skill_view(s)}


def _skill_of(d: Mapping[str, Any]) -> Skill:
    spawn = d.get("spawnConfig") or {}
    return Skill(
        skill_id=d["_id"],
        pattern_id=d["patternId"],
        scope=scope_of(d),
        name=d["name"],
        description=d.get("description", ""),
        tools=tuple(spawn.get("tools") or ()),
        success_rate=float(d.get("successRate", 0.0)),
        confidence=float((spawn.get("conditions") or {}).get("minConfidence", 0.0)),
        created_at=int(d["createdAt"]),
        category=d.get("category", "learned"),
        usage_count=int(d.get("usageCount", 0)),
        promotion=_promotion(d.get("promotion")),
    )


def _promotion(value: object) -> Promotion:
    """The stored `promotion`; `manual` when absent (a skill stored before issue 17)."""
    for known in PROMOTIONS:
        if value == known:
            return known
    return "manual"


class MongoSkillStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[SKILLS]

    async def promote(self, skill: Skill) -> bool:
        try:
            await self._col.insert_one(skill_document(skill))
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"skill insert failed: {exc}") from exc
        return True

    async def get(self, where: TenantFilter, skill_id: str) -> Skill | None:
        try:
            doc = await self._col.find_one({**tenant_query(where), "_id": skill_id})
        except PyMongoError as exc:
            raise DependencyFailed(f"skill read failed: {exc}") from exc
        return _skill_of(doc) if doc is not None else None

    async def list(self, where: TenantFilter, limit: int) -> builtins.list[Skill]:
        order = [("successRate", DESCENDING), ("usageCount", DESCENDING)]
        try:
            cursor = self._col.find(tenant_query(where)).sort(
                [*order, ("createdAt", DESCENDING), ("_id", ASCENDING)]
            )
            docs = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"skill read failed: {exc}") from exc
        return [_skill_of(d) for d in docs]
