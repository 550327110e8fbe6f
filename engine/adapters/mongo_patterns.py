"""MongoDB `PatternCounter` and `SkillStore`.

The counter writes the `patterns` collection that `MongoPatternStore.active` (the patterns
layer) reads, in the same document shape, plus `successCount` and `turnIds`. Each execution
is ONE update with an aggregation pipeline, so the counts, `successRate` and `summary` never
disagree, even under concurrent turns: the first stage increments and fills insert-only
fields with `$ifNull` (a pipeline has no `$setOnInsert`, and no field is written twice,
unlike the reference's `$set` + `$setOnInsert` conflict, §16.4); the second stage derives
`successRate` and `summary` from the new counts (the same text as
`engine.ingest.patterns.describe`).

Idempotency is the transcript append's: the filter `turnIds: {$ne: turnId}` matches no
document once the turn is counted, so the upsert collides on `_id` (DuplicateKeyError).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo import PATTERNS, Doc, _scope_doc, _scope_of, _vector, tenant_query
from engine.errors import DependencyFailed
from engine.ingest.patterns import (
    PATTERN_TAGS,
    PATTERN_TYPE,
    SKILL_TAGS,
    TRIGGER_TYPE,
    TURN_IDS_KEPT,
    PatternSeed,
    PatternState,
    Skill,
)
from engine.records import ACTIVE
from engine.scoping import TenantFilter

SKILLS = "skills"
_TENANT = [("agentWallet", ASCENDING), ("userAddress", ASCENDING)]
INDEXES: Mapping[str, Sequence[IndexModel]] = {
    PATTERNS: (
        IndexModel(
            [*_TENANT, ("successRate", DESCENDING), ("executionCount", DESCENDING)],
            name="tenant_success_executions",
        ),
    ),
    SKILLS: (
        IndexModel(
            [*_TENANT, ("successRate", DESCENDING), ("usageCount", DESCENDING)],
            name="tenant_success_usage",
        ),
        IndexModel([("patternId", ASCENDING)], name="pattern"),
    ),
}
_PATTERN_ORDER = [
    ("successRate", DESCENDING),
    ("executionCount", DESCENDING),
    ("lastExecuted", DESCENDING),
    ("_id", ASCENDING),
]
_SKILL_ORDER = [
    ("successRate", DESCENDING),
    ("usageCount", DESCENDING),
    ("createdAt", DESCENDING),
    ("_id", ASCENDING),
]


async def ensure_indexes(db: AsyncDatabase[Doc]) -> None:
    """Create the collections and indexes of patterns and skills, one at a time (see
    `engine.adapters.mongo.ensure_schema` for why sequentially). Idempotent."""
    existing = set(await db.list_collection_names())
    for name in INDEXES:
        if name not in existing:
            await db.create_collection(name)
    for name, models in INDEXES.items():
        for model in models:
            await db[name].create_indexes([model])


def _lit(value: Any) -> Doc:
    """A constant in an aggregation expression (a "$…" string would read as a field path)."""
    return {"$literal": value}


def _once(name: str, value: Any) -> Doc:
    """Keep the stored value; write `value` only when the field is missing (insert)."""
    return {"$ifNull": [f"${name}", _lit(value)]}


def _pipeline(pattern: PatternSeed, turn_id: str, succeeded: bool, at: int) -> list[Doc]:
    static = {
        "patternId": pattern.pattern_id,
        **_scope_doc(pattern.scope),
        "patternType": PATTERN_TYPE,
        "trigger": {"type": TRIGGER_TYPE, "value": pattern.trigger},
        "steps": [{"action": a, "order": i} for i, a in enumerate(pattern.steps)],
        "status": ACTIVE,
        "tags": list(PATTERN_TAGS),
        "embedding": None,
        "embeddingModel": None,
    }
    counts: Doc = {
        "executionCount": {"$add": [{"$ifNull": ["$executionCount", 0]}, 1]},
        "successCount": {"$add": [{"$ifNull": ["$successCount", 0]}, int(succeeded)]},
        # the earliest execution, not the first one processed: turns of different
        # sessions arrive in any order, and a replay must give the same document
        "createdAt": {"$min": ["$createdAt", _lit(at)]},
        "lastExecuted": {"$max": ["$lastExecuted", _lit(at)]},
        "updatedAt": {"$max": ["$updatedAt", _lit(at)]},
        "turnIds": {
            "$slice": [
                {"$concatArrays": [{"$ifNull": ["$turnIds", []]}, [_lit(turn_id)]]},
                -TURN_IDS_KEPT,
            ]
        },
    }
    percent = {
        "$toInt": {
            "$floor": {
                "$add": [
                    {"$divide": [{"$multiply": ["$successCount", 100]}, "$executionCount"]},
                    0.5,
                ]
            }
        }
    }
    derived: Doc = {
        "successRate": {"$divide": ["$successCount", "$executionCount"]},
        "summary": {
            "$concat": [
                _lit(f"Tool sequence: {' -> '.join(pattern.steps)} (used "),
                {"$toString": "$executionCount"},
                {"$cond": [{"$eq": ["$executionCount", 1]}, " time, ", " times, "]},
                {"$toString": percent},
                _lit(f"% successful). Starts with {pattern.trigger}."),
            ]
        },
    }
    return [
        {"$set": {**{k: _once(k, v) for k, v in static.items()}, **counts}},
        {"$set": derived},
    ]


def _state_of(d: Mapping[str, Any]) -> PatternState:
    return PatternState(
        pattern_id=d["patternId"],
        scope=_scope_of(d),
        steps=tuple(s["action"] for s in sorted(d.get("steps", []), key=lambda s: s["order"])),
        executions=int(d.get("executionCount", 0)),
        successes=int(d.get("successCount", 0)),
        last_executed=int(d["lastExecuted"]),
        created_at=int(d["createdAt"]),
        status=d.get("status", ACTIVE),
    )


class MongoPatternCounter:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[PATTERNS]

    async def record_execution(
        self, pattern: PatternSeed, *, turn_id: str, succeeded: bool, at: int
    ) -> bool:
        pipeline = _pipeline(pattern, turn_id, succeeded, at)
        query = {"_id": pattern.pattern_id, "turnIds": {"$ne": turn_id}}
        for attempt in range(2):
            try:
                result = await self._col.update_one(query, pipeline, upsert=True)
            except DuplicateKeyError:
                # Either the turn is counted already, or a concurrent first execution of
                # another turn inserted the document meanwhile: retrying tells them apart.
                if attempt == 0:
                    continue
                return False
            except PyMongoError as exc:
                raise DependencyFailed(f"pattern count failed: {exc}") from exc
            return result.upserted_id is not None or result.modified_count == 1
        return False

    async def get(self, where: TenantFilter, pattern_id: str) -> PatternState | None:
        try:
            doc = await self._col.find_one({**tenant_query(where), "_id": pattern_id})
        except PyMongoError as exc:
            raise DependencyFailed(f"pattern read failed: {exc}") from exc
        return _state_of(doc) if doc is not None and "successCount" in doc else None

    async def list(self, where: TenantFilter, limit: int) -> builtins.list[PatternState]:
        query = {**tenant_query(where), "successCount": {"$exists": True}}
        order = [("successRate", DESCENDING), ("executionCount", DESCENDING)]
        try:
            cursor = self._col.find(query).sort(
                [*order, ("lastExecuted", DESCENDING), ("_id", ASCENDING)]
            )
            docs = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"pattern read failed: {exc}") from exc
        return [_state_of(d) for d in docs]


def skill_document(s: Skill) -> Doc:
    """The stored skill (reference §9.3's shape, keyed by its id); the admin API shows it
    as is, without `_id`."""
    return {
        "_id": s.skill_id,
        "skillId": s.skill_id,
        "patternId": s.pattern_id,
        **_scope_doc(s.scope),
        "name": s.name,
        "description": s.description,
        "category": s.category,
        "trigger": {"type": "pattern", "patterns": [s.pattern_id, *s.tools]},
        "spawnConfig": {
            "skillType": "learned",
            "tools": list(s.tools),
            "maxSteps": s.max_steps,
            "conditions": {"minConfidence": s.confidence},
        },
        "successRate": s.success_rate,
        "usageCount": s.usage_count,
        "creator": s.creator,
        "agents": [s.scope.agent_wallet],
        "tags": list(s.tags),
        "createdAt": s.created_at,
    }


def _skill_of(d: Mapping[str, Any]) -> Skill:
    spawn = d.get("spawnConfig") or {}
    return Skill(
        skill_id=d["_id"],
        pattern_id=d["patternId"],
        scope=_scope_of(d),
        name=d["name"],
        description=d.get("description", ""),
        tools=tuple(spawn.get("tools") or ()),
        success_rate=float(d.get("successRate", 0.0)),
        confidence=float((spawn.get("conditions") or {}).get("minConfidence", 0.0)),
        created_at=int(d["createdAt"]),
        category=d.get("category", "learned"),
        usage_count=int(d.get("usageCount", 0)),
        creator=d.get("creator", "system"),
        tags=tuple(d.get("tags") or SKILL_TAGS),
    )


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


async def set_pattern_embedding(
    db: AsyncDatabase[Doc], pattern_id: str, embedding: Any, model: str
) -> bool:
    """Store the embedding of a pattern's steps once (the summary's counts change, the steps
    never do, so the vector is computed from the steps alone)."""
    try:
        result = await db[PATTERNS].update_one(
            {"_id": pattern_id, "embedding": None},
            {"$set": {"embedding": _vector(embedding), "embeddingModel": model}},
        )
    except PyMongoError as exc:
        raise DependencyFailed(f"pattern embedding update failed: {exc}") from exc
    return result.modified_count == 1
