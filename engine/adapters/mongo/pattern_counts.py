"""MongoDB `PatternCounter`.

The counter writes the `patterns` collection that `MongoPatternStore.active` (the patterns
layer) reads, in the same document shape, plus `successCount`, `unknownCount` (runs that did
not report their outcome; absent in a document counted before issue 17, when there were
none, so it reads as 0) and `turnIds`. Each execution
is ONE update with an aggregation pipeline, so the counts, `successRate` and `summary` never
disagree, even under concurrent turns: the first stage increments and fills insert-only
fields with `$ifNull` (a pipeline has no `$setOnInsert`, and no field is written twice,
unlike the reference's `$set` + `$setOnInsert` conflict, §16.4); the second stage derives
`successRate` (over the runs with a known outcome) and `summary` from the new counts (the
same text as `engine.ingest.patterns.describe`).

Idempotency is `documents.append_once`: the filter
`turnIds: {$ne: turnId}` matches no document once the turn is counted, so the upsert
collides on `_id` (DuplicateKeyError).
The indexes it reads by are `engine.adapters.mongo.schema.PATTERN_INDEXES`.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.documents import Doc, scope_doc, scope_of, tenant_query, vector
from engine.adapters.mongo.schema import PATTERNS
from engine.errors import DependencyFailed
from engine.ingest.outcomes import Outcome
from engine.ingest.patterns import (
    PATTERN_TAGS,
    PATTERN_TYPE,
    TRIGGER_TYPE,
    TURN_IDS_KEPT,
    PatternSeed,
    PatternState,
)
from engine.ports import Vector
from engine.records import ACTIVE
from engine.scoping import TenantFilter


def _lit(value: Any) -> Doc:
    """A constant in an aggregation expression (a "$…" string would read as a field path)."""
    return {"$literal": value}


def _once(name: str, value: Any) -> Doc:
    """Keep the stored value; write `value` only when the field is missing (insert)."""
    return {"$ifNull": [f"${name}", _lit(value)]}


def _pipeline(pattern: PatternSeed, turn_id: str, succeeded: Outcome, at: int) -> list[Doc]:
    static = {
        "patternId": pattern.pattern_id,
        **scope_doc(pattern.scope),
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
        "successCount": {"$add": [{"$ifNull": ["$successCount", 0]}, int(succeeded is True)]},
        "unknownCount": {"$add": [{"$ifNull": ["$unknownCount", 0]}, int(succeeded is None)]},
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
    return [
        {"$set": {**{k: _once(k, v) for k, v in static.items()}, **counts}},
        {"$set": _derived(pattern)},
    ]


def _derived(pattern: PatternSeed) -> Doc:
    """`successRate` and `summary` from the new counts: the rate over the runs with a known
    outcome (0 without one), the text of `describe`. Divisions are by at least 1, so no
    branch fails whichever the server evaluates."""
    known_count = {"$subtract": ["$executionCount", "$unknownCount"]}
    per_known = {"$max": [known_count, 1]}
    percent = {
        "$toInt": {
            "$floor": {
                "$add": [
                    {"$divide": [{"$multiply": ["$successCount", 100]}, per_known]},
                    0.5,
                ]
            }
        }
    }
    unknown = {
        "$cond": [
            {"$eq": [known_count, 0]},
            {"$cond": [{"$eq": ["$unknownCount", 1]}, ", outcome unknown", ", outcomes unknown"]},
            {
                "$concat": [
                    ", ",
                    {"$toString": "$unknownCount"},
                    {"$cond": [{"$eq": ["$unknownCount", 1]}, " outcome", " outcomes"]},
                    " unknown",
                ]
            },
        ]
    }
    known = {"$gt": [known_count, 0]}
    return {
        "successRate": {"$cond": [known, {"$divide": ["$successCount", per_known]}, 0.0]},
        "summary": {
            "$concat": [
                _lit(f"Tool sequence: {' -> '.join(pattern.steps)} (used "),
                {"$toString": "$executionCount"},
                {"$cond": [{"$eq": ["$executionCount", 1]}, " time", " times"]},
                {"$cond": [known, {"$concat": [", ", {"$toString": percent}, "% successful"]}, ""]},
                {"$cond": [{"$gt": ["$unknownCount", 0]}, unknown, ""]},
                _lit(f"). Starts with {pattern.trigger}."),
            ]
        },
    }


def _state_of(d: Mapping[str, Any]) -> PatternState:
    return PatternState(
        pattern_id=d["patternId"],
        scope=scope_of(d),
        steps=tuple(s["action"] for s in sorted(d.get("steps", []), key=lambda s: s["order"])),
        executions=int(d.get("executionCount", 0)),
        successes=int(d.get("successCount", 0)),
        unknown=int(d.get("unknownCount", 0)),
        last_executed=int(d["lastExecuted"]),
        created_at=int(d["createdAt"]),
        status=d.get("status", ACTIVE),
    )


class MongoPatternCounter:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[PATTERNS]

    async def record_execution(
        self, pattern: PatternSeed, *, turn_id: str, succeeded: Outcome, at: int
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

    async def set_embedding(self, pattern_id: str, embedding: Vector, model: str) -> bool:
        """Store the embedding of a pattern's steps once (the summary's counts change, the
        steps never do, so the vector is computed from the steps alone)."""
        try:
            result = await self._col.update_one(
                {"_id": pattern_id, "embedding": None},
                {"$set": {"embedding": vector(embedding), "embeddingModel": model}},
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"pattern embedding update failed: {exc}") from exc
        return result.modified_count == 1
